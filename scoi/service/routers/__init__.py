"""The routes of ``scoi serve``, one ``APIRouter`` per area. Each router declares what it
uses (scoi.service.deps) and runs its work through scoi.service.state.run_limited; the
application (scoi.service.app) includes them under ``/api`` behind the token check.

- :mod:`.selection`: ``/select``, ``/prompt``; :mod:`.translate`: ``/translate``;
  :mod:`.lookup`: ``/lookup``
- :mod:`.jobs`: ``/jobs``, ``/jobs/{ref}``; :mod:`.gaps`: ``/gaps``
- :mod:`.info`: ``/config``, ``/models``, ``/corpora``, and ``/health`` (no token)
- :mod:`.pages`: the coverage page ``/`` and the API docs ``/docs``
"""
