"""``scoi serve``: an HTTP API and a coverage page over the library calls the CLI makes,
laid out as FastAPI recommends (docs/architecture.md, "The service").

- :mod:`scoi.service.config`: what the operator configures (models, limits, the token);
  requests only choose among these names.
- :mod:`scoi.service.models`: the request bodies and error answers (pydantic).
- :mod:`scoi.service.state`: what requests share (``Service``: selectors, models, the
  configuration), the checks on what they send, and the time-limited runner.
- :mod:`scoi.service.deps`: the dependencies routes declare (service, settings, selectors,
  database, token).
- :mod:`scoi.service.routers`: one ``APIRouter`` per area (selection, translate, lookup,
  jobs, gaps, info, pages).
- :mod:`scoi.service.selectors`: one warm Selector per direction, shared by requests
  under a lock (spaCy parsers and psycopg connections are not thread-safe).
- :mod:`scoi.service.explain`: which example covers which word and tree term of a
  sentence, and the dependency tree drawn by displaCy, for the page.
- :mod:`scoi.service.guard`: the Host and Origin checks, security headers, redaction.
- :mod:`scoi.service.app`: the FastAPI application (``create_app``) assembling them.
"""
