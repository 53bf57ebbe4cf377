"""The one secret checker (scoi.secrets): every place a secret can hide in backend options,
URLs and PostgreSQL conninfo is found, and no message ever holds the secret itself.
Numbers in test names are those of the reliability run of 2026-11-24."""

from __future__ import annotations

import pytest

from scoi.secrets import (SecretError, check_database_url, check_options, check_value, describe_database_url,
                          is_secret_name)


def refused(options: dict, secret: str) -> str:
    with pytest.raises(SecretError) as info:
        check_options(options)
    message = str(info.value)
    assert secret not in message and "\n" not in message, message
    assert "SCOI_OPENAI_API_KEY" in message  # where keys go instead
    return message


def test_a_key_nested_in_json_lists_is_found():
    message = refused({"extra_body": {"items": [{"api_key": "SECRET7"}]}}, "SECRET7")
    assert "'extra_body'" in message and "'api_key' at items[0]" in message
    refused({"extra_body": {"a": [[{"b": {"Authorization": "xyz-SECRET8"}}]]}}, "SECRET8")
    refused({"extra_body": {"headers": ["Bearer SECRET81xyz"]}}, "SECRET81")


def test_url_user_info_is_refused_with_or_without_a_password():
    assert "user info in a URL" in refused({"base_url": "http://SECRET9@127.0.0.1:9/v1"}, "SECRET9")
    refused({"base_url": "https://me:SECRET91@host/v1"}, "SECRET91")
    refused({"extra_body": {"callback": "http://SECRET92@host/"}}, "SECRET92")


def test_a_credential_in_a_url_query_string_is_refused():
    message = refused({"base_url": "http://127.0.0.1:9/v1?api_key=SECRET10"}, "SECRET10")
    assert "query parameter 'api_key'" in message
    refused({"base_url": "http://h/v1?x=1&access_token=SECRET11"}, "SECRET11")
    refused({"base_url": "http://h/v1?key=sk-SECRET12abcdef"}, "SECRET12")
    refused({"base_url": "http://h/v1?q=sk-SECRET13abcdef"}, "SECRET13")  # a token under any name


@pytest.mark.parametrize("name", ["pwd", "pass", "passwd", "password", "apikey", "apikeys", "api_key", "API-KEY",
                                  "apiKey", "x-api-key", "token", "hf_token", "access_token", "secret",
                                  "client_secret", "sk", "authorization", "Authorization", "bearer", "credential",
                                  "credentials", "cookie", "db_pwd", "openai_key", "sslpassword", "passfile"])
def test_secret_looking_option_names_are_refused(name):
    assert is_secret_name(name)
    message = refused({name: "hunter2-SECRET21"}, "SECRET21")
    assert "looks like a secret" in message


@pytest.mark.parametrize("name", ["base_url", "timeout", "max_retries", "base_delay", "max_delay", "concurrency",
                                  "extra_body", "name", "batch_size", "dtype", "device", "threads",
                                  "trust_remote_code", "max_tokens", "stop_token_ids", "skip_special_tokens",
                                  "top_k", "logit_bias", "repetition_penalty", "guided_json", "seed"])
def test_ordinary_option_names_pass(name):
    assert not is_secret_name(name)
    check_options({name: 1})


def test_token_values_are_refused_whatever_their_key():
    refused({"sk": "sk-SECRET2abcdefgh"}, "SECRET2")
    refused({"note": "sk-proj-SECRET3abcdefgh"}, "SECRET3")
    refused({"x": "hf_SECRET4abcdefghijklmnop"}, "SECRET4")
    refused({"sk-SECRET5abcdefgh": 1}, "SECRET5")  # a token pasted as a key is not echoed either
    check_options({"base_url": "http://127.0.0.1:8000/v1", "extra_body": {"stop": ["###"], "top_k": 1}})


def test_a_conninfo_password_pasted_into_a_backend_option_is_refused():
    with pytest.raises(SecretError, match="password= setting") as info:
        check_value({"dsn": "host=h password=SECRET14"}, "backend option 'x'")
    assert "SECRET14" not in str(info.value)


@pytest.mark.parametrize("url,what", [
    ("host=/srv/pg dbname=scoi user=postgres sslpassword=SEKRIT_SSL3", "sslpassword"),
    ("postgresql://postgres@/scoi?host=/srv/pg&sslpassword=SEKRIT_SSL3", "sslpassword"),
    ("host=/srv/pg dbname=scoi password=SEKRIT_SSL3", "a password"),
    ("postgresql://u:SEKRIT_SSL3@db/scoi", "a password"),
    ("postgresql://u@db/scoi?password=SEKRIT_SSL3", "a password"),
    ("host=db dbname=scoi passfile=/tmp/SEKRIT_SSL3", "passfile"),
    ("postgresql://u@db/scoi?passfile=/tmp/SEKRIT_SSL3", "passfile"),
    ("host=db dbname=scoi application_name=sk-SEKRIT_SSL3", "secret"),
    ("host=db sslpassword SEKRIT_SSL3", "not a PostgreSQL URL"),  # unreadable: not echoed either
])
def test_database_passwords_in_both_forms_are_refused_and_never_echoed(url, what):
    with pytest.raises(SecretError) as info:
        check_database_url(url, "--source-url")
    message = str(info.value)
    assert what in message and "--source-url" in message and "SEKRIT" not in message, message
    if what != "not a PostgreSQL URL":
        assert "PGPASSWORD" in message and "~/.pgpass" in message


def test_database_urls_without_a_secret_pass_and_are_described_without_one():
    for url in ("host=/srv/pg dbname=scoi user=postgres", "postgresql://postgres@/scoi?host=/srv/pg",
                "service=reports", "postgresql://reader@db:5433/app?sslmode=require"):
        check_database_url(url, "--source-url")
    assert describe_database_url("postgresql://u:SEKRIT@db:5433/app?sslpassword=SEKRIT2") == \
        "host=db port=5433 dbname=app user=u"
    assert "SEKRIT" not in describe_database_url("host=/x dbname=d sslpassword=SEKRIT")
    assert "SEKRIT" not in describe_database_url("host=x sslpassword SEKRIT")


def test_values_nested_too_deeply_to_search_are_refused():
    deep: list = []
    inner = deep
    for _ in range(40):
        inner.append([])
        inner = inner[0]
    with pytest.raises(SecretError, match=r"backend option 'extra_body' is nested deeper than 32 levels"):
        check_options({"extra_body": {"a": deep}})
    check_options({"extra_body": {"a": [[[{"top_k": 1}]]]}})
