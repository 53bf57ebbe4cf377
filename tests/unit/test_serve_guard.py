"""What every answer of ``scoi serve`` goes through: which Hosts and Origins a server
without a token takes, and what of an error text clients see."""

from __future__ import annotations

import pytest

from scoi.service.guard import Guard, local_host, redact


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "127.0.0.1", "localhost:1", "LOCALHOST", "[::1]:8765",
                                  "127.3.4.5:80"])
def test_loopback_host_headers_are_this_machine(host):
    assert local_host(host)


@pytest.mark.parametrize("host", ["evil.example:8765", "evil.example", "localhost.evil.example", "10.0.0.1:8765",
                                  "[::2]:8765", "", ":8765", "127.0.0.1.nip.io"])
def test_other_host_headers_are_not(host):
    assert not local_host(host)


def scope(method: str, host: str, origin: str | None = None) -> dict:
    headers = [(b"host", host.encode())] + ([(b"origin", origin.encode())] if origin else [])
    return {"type": "http", "method": method, "headers": headers}


def test_a_post_from_the_same_origin_passes_and_from_another_is_refused():
    assert Guard.refusal(scope("POST", "127.0.0.1:8765", "http://127.0.0.1:8765")) is None
    assert Guard.refusal(scope("POST", "127.0.0.1:8765")) is None  # curl, scripts: no Origin
    assert Guard.refusal(scope("GET", "127.0.0.1:8765", "http://localhost:18999")) is None  # reads: CORS hides them
    status, body = Guard.refusal(scope("POST", "127.0.0.1:8765", "http://localhost:18999"))
    assert status == 403 and "http://localhost:18999" in body["error"]
    assert Guard.refusal(scope("DELETE", "localhost:8765", "http://127.0.0.1:8765"))[0] == 403
    assert Guard.refusal(scope("GET", "evil.example:8765"))[0] == 421


@pytest.mark.parametrize("message,hidden,shown", [
    ("http://127.0.0.1:18998/internal-secret-path/v1/completions still failing after 3 tries",
     ["127.0.0.1", "internal-secret-path"], "<url> still failing after 3 tries"),
    ("GGUF file not found: /srv/private/models/secret-model.gguf (give the path of an existing .gguf file)",
     ["/srv/private"], "GGUF file not found: <path> (give the path of an existing .gguf file)"),
    ("cannot load the tokenizer of /tmp/x/evilmodel: no tokenizer.json", ["/tmp/x"],
     "cannot load the tokenizer of <path>: no tokenizer.json"),
    ("model 'm' cannot be loaded: '~/models/m.gguf' or ./rel/m", ["models/m", "rel/m"],
     "model 'm' cannot be loaded: '<path>' or <path>"),
])
def test_error_texts_lose_urls_and_paths(message, hidden, shown):
    got = redact(message)
    assert got == shown
    assert not any(h in got for h in hidden)


@pytest.mark.parametrize("message", ["unknown template 't.j2'; this server offers: xglm, alpaca",
                                     "give one of job=JOB or schedule=NAME", "retry later (GET /api/models shows it)",
                                     "a body sent as text/plain is not JSON", "k = 9 is over the server's limit of 5"])
def test_error_texts_without_urls_or_paths_are_kept(message):
    assert redact(message) == message
