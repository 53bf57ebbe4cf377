"""The pages a person opens in a browser: the coverage page at ``/`` and the API docs at
``/docs``. Swagger UI 5 (it reads OpenAPI 3.1) is served from the files fastapi-offline
ships, so the docs work without internet (FastAPI's default loads them from a CDN); only the
files the page needs are served, and its start-up script is a file of ours: the CSP allows
no inline script."""

from __future__ import annotations

from importlib import resources

import fastapi_offline
from fastapi import APIRouter
from fastapi.responses import FileResponse, HTMLResponse

from scoi.service.state import ApiError

#: The page's files (index.html, app.js, the stylesheet), mounted at /static by create_app.
STATIC = resources.files("scoi.service").joinpath("static")
SWAGGER = resources.files(fastapi_offline).joinpath("static")
#: /docs-static/NAME: (folder, media type) of each file the docs page loads.
DOCS_ASSETS = {"swagger-ui-bundle.js": (SWAGGER, "text/javascript"), "swagger-ui.css": (SWAGGER, "text/css"),
               "favicon.png": (SWAGGER, "image/png"), "docs.js": (STATIC, "text/javascript")}

DOCS_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>scoi API</title>
<link rel="stylesheet" href="/docs-static/swagger-ui.css"><link rel="icon" href="/docs-static/favicon.png">
</head><body><div id="swagger-ui"></div>
<script src="/docs-static/swagger-ui-bundle.js"></script><script src="/docs-static/docs.js"></script>
</body></html>
"""

router = APIRouter(include_in_schema=False)


@router.get("/")
async def page() -> FileResponse:
    return FileResponse(str(STATIC.joinpath("index.html")))


@router.get("/docs-static/{name}")
async def docs_asset(name: str) -> FileResponse:
    if name not in DOCS_ASSETS:
        raise ApiError(404, f"no file {name[:60]!r} under /docs-static")
    folder, media = DOCS_ASSETS[name]
    return FileResponse(str(folder.joinpath(name)), media_type=media)


@router.get("/docs")
async def docs() -> HTMLResponse:
    return HTMLResponse(DOCS_PAGE)
