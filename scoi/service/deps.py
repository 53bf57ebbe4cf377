"""The dependencies routes declare (FastAPI ``Depends``): the shared :class:`Service`, the
server's settings, the selector pool, the database, and the token check. A route names
what it uses in its signature, so it reads without the application around it and a test
can replace any of them (``app.dependency_overrides``).

The database dependency is a way to open a connection, not an open one: routes open it
inside their worker thread, under the request time limit (scoi.service.state.run_limited),
so a database that is down answers 503 within the limit, and a request refused for its
content (unknown model, blank text) never waits for a connection.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Annotated

import psycopg
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from scoi.service.config import TOKEN_ENV, ServeConfig
from scoi.service.selectors import SelectorCache
from scoi.service.state import ApiError, Service

Connect = Callable[[], psycopg.Connection]


def get_service(request: Request) -> Service:
    """The application's Service (made once by create_app)."""
    return request.app.state.service


ServiceDep = Annotated[Service, Depends(get_service)]


def get_settings(service: ServiceDep) -> ServeConfig:
    """What the operator configured (models, limits, token)."""
    return service.config


def get_selectors(service: ServiceDep) -> SelectorCache:
    """The warm selectors, one per direction, shared under their locks."""
    return service.selectors


def get_connect(service: ServiceDep) -> Connect:
    """Opens a connection to the server's database (a context manager: closed after use)."""
    return service.connect


SettingsDep = Annotated[ServeConfig, Depends(get_settings)]
SelectorsDep = Annotated[SelectorCache, Depends(get_selectors)]
ConnectDep = Annotated[Connect, Depends(get_connect)]

bearer = HTTPBearer(auto_error=False, description=f"The server's {TOKEN_ENV}, when it has one.")


def authorised(settings: SettingsDep,
               creds: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> None:
    """Let the request through when the server has no token or the request sends it (401
    otherwise; compared in constant time)."""
    if settings.token is None:
        return
    given = creds.credentials if creds is not None else ""
    if not hmac.compare_digest(given.encode(), settings.token.encode()):
        raise ApiError(401, "missing or wrong token: send 'Authorization: Bearer TOKEN' with the server's "
                            f"{TOKEN_ENV}")
