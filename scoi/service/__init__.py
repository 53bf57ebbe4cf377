"""``scoi serve``: an HTTP API and a coverage page over the library calls the CLI makes.

- :mod:`scoi.service.config`: what the operator configures (models, limits, the token);
  requests only choose among these names.
- :mod:`scoi.service.selectors`: one warm Selector per direction, shared by requests
  under a lock (spaCy parsers and psycopg connections are not thread-safe).
- :mod:`scoi.service.explain`: which example covers which word and tree term of a
  sentence, and the dependency tree drawn by displaCy, for the page.
- :mod:`scoi.service.app`: the FastAPI application (``create_app``).
"""
