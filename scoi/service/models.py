"""The bodies ``scoi serve`` accepts and the errors it answers, as pydantic models: FastAPI
validates requests against them (422 before any route runs) and publishes them in
``/openapi.json``. Defaults come from scoi.core.defaults, as the CLI's and ``JobSpec``'s do
(tests/unit/test_job_settings.py ties ``JobRequest`` to ``JobSpec``)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from scoi.core import defaults
from scoi.core.limits import LIMITS
from scoi.jobs.spec import JobSpec
from scoi.service.config import TEMPLATES, ModelConfig

Lang = Annotated[str, Field(pattern=r"^[A-Za-z]{2,3}$", description="Language code, e.g. fr")]
Choice = Annotated[str, Field(min_length=1, max_length=40)]
#: The largest value PostgreSQL's bigint (job ids, offsets) holds.
BIGINT_MAX = 2**63 - 1

WHERE_DESCRIPTION = ("Only pairs whose metadata holds each key with that string value, e.g. {\"domain\": \"legal\"} "
                     "(scoi select --where domain=legal).")
REUSE_DESCRIPTION = ("exact: a sentence stored verbatim (after whitespace and Unicode normalisation, within where) "
                     "gets its stored translation, without the model (origin tm); off: the model always translates.")


class ErrorBody(BaseModel):
    """Every answer other than 2xx."""

    error: str = Field(description="One line saying what was wrong and what is accepted.")


class InvalidBody(ErrorBody):
    """422: a body, path or query value that is malformed (not JSON, wrong type, NaN, a
    lone surrogate, a NUL, a blank sentence, a number out of range)."""

    details: list[dict[str, Any]] = Field(description="Each finding: loc (where), msg, type.")


#: The error answers the API declares (OpenAPI) besides 422, which every route may give.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": text} for status, text in (
        (400, "A choice the server does not offer (method, template, model, direction), or over a limit."),
        (401, "The token is missing or wrong (servers started with SCOI_SERVE_TOKEN)."),
        (403, "A state-changing request from another origin (servers without a token)."),
        (404, "No such job or schedule."),
        (413, "A body, sentence or batch over the server's limits."),
        (421, "A Host other than this machine's (servers without a token)."),
        (502, "The model's backend failed (no backend URL or path is shown)."),
        (503, "The database is unavailable, a model is still loading, or the direction's selector stayed busy."),
        (504, "The request took longer than the server's time limit."))}
ERROR_RESPONSES[422] = {"model": InvalidBody, "description": "A malformed body, path or query value."}


class Strict(BaseModel):
    """A body with no fields but its own: an unknown field (a file path, a backend URL, a
    typo) is refused, not ignored."""

    model_config = ConfigDict(extra="forbid")


class SelectRequest(Strict):
    text: str = Field(min_length=1, description="The sentence to translate (source language).")
    src: Lang
    tgt: Lang
    method: Choice = defaults.METHOD
    k: int = Field(defaults.K, ge=0)
    min_match: float | None = Field(None, ge=0, le=100, description="Only candidates at or above this match %.")
    explain: bool = Field(True, description="Candidates as objects with score and text (scoi select --explain).")
    coverage: bool = Field(False, description="Add which pick covers which word and tree term, and the pool.")
    tree: bool = Field(True, description="With coverage: the dependency tree as displaCy SVG.")
    where: dict[str, str] | None = Field(None, description=WHERE_DESCRIPTION)
    glossary: str | None = Field(None, min_length=1, max_length=200,
                                 description="A glossary's name: the terms found in the sentence (docs/glossary.md).")


class PromptRequest(Strict):
    text: str = Field(min_length=1)
    src: Lang
    tgt: Lang
    method: Choice = defaults.METHOD
    k: int = Field(defaults.K, ge=0)
    template: Choice = Field(defaults.TEMPLATE, description=f"One of {', '.join(TEMPLATES)}.")
    order: Choice = defaults.ORDER
    seed: int = defaults.SEED
    where: dict[str, str] | None = Field(None, description=WHERE_DESCRIPTION)
    glossary: str | None = Field(None, min_length=1, max_length=200,
                                 description="A glossary's name: the terms found in the sentence (docs/glossary.md).")
    min_match: float | None = Field(None, ge=0, le=100, description="Only examples at or above this match %.")


class TranslateRequest(PromptRequest):
    model: Choice = Field(description="A model name the server was started with (GET /api/config).")
    max_new_tokens: int = Field(defaults.MAX_NEW_TOKENS, ge=1, le=1024)
    reuse: Choice = Field(defaults.REUSE, description=REUSE_DESCRIPTION)


class JobRequest(Strict):
    # The JobSpec settings a client may choose (the model by its server name), with the
    # sentences instead of an input file. A comment, not a docstring: OpenAPI would show it.

    sentences: list[str] = Field(min_length=1, description="One item per sentence, in order.")
    references: list[str] | None = None
    src: Lang
    tgt: Lang
    model: Choice
    name: str | None = Field(None, min_length=1, max_length=200)
    method: Choice = defaults.METHOD
    k: int = Field(defaults.K, ge=0)
    template: Choice = defaults.TEMPLATE
    order: Choice = defaults.ORDER
    max_new_tokens: int = Field(defaults.MAX_NEW_TOKENS, ge=1, le=1024)
    reuse: Choice = Field(defaults.REUSE, description=REUSE_DESCRIPTION)
    where: dict[str, str] | None = Field(None, description=WHERE_DESCRIPTION)
    glossary: str | None = Field(None, min_length=1, max_length=200,
                                 description="A glossary's name: terms into prompts, outputs checked (docs/glossary.md).")
    min_match: float | None = Field(None, ge=0, le=100, description="Only examples at or above this match %.")

    def spec(self, model: ModelConfig) -> JobSpec:
        """The job these settings describe, translated by ``model`` (its spec and options
        stay on the server). Every field but the inputs and the model's name is a JobSpec
        setting of the same name, so none can be dropped on the way."""
        settings = self.model_dump(exclude={"sentences", "references", "model"})
        return JobSpec(**settings, model=model.spec, backend_options=dict(model.options))


class GapsRequest(Strict):
    sentences: list[str] = Field(min_length=1)
    src: Lang
    tgt: Lang
    method: Choice = defaults.METHOD
    k: int = Field(defaults.K, ge=0)
    limit: int = Field(defaults.GAPS_LIMIT, ge=1, le=LIMITS["gaps_limit"][1])


class LookupRequest(Strict):
    text: str = Field(min_length=1, description="The sentence to look up (source language).")
    src: Lang
    tgt: Lang
    min_match: float = Field(defaults.LOOKUP_MIN_MATCH, ge=0, le=100, description=(
        "Lowest match % returned (default 70, the CAT tools' fuzzy-match threshold; from 50 on, every stored "
        "sentence that can reach it is checked, below it the BM25 pool only)."))
    n: int = Field(defaults.LOOKUP_N, ge=1, le=100, description="Matches returned at most.")
    pool: int = Field(defaults.LOOKUP_POOL, ge=1, le=LIMITS["pool"][1],
                      description="Exact BM25 candidates the match % is computed on.")
    where: dict[str, str] | None = Field(None, description=WHERE_DESCRIPTION)
