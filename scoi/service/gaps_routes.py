"""The ``/api/gaps`` endpoints (coverage-gap analytics, scoi.gaps)."""

from __future__ import annotations

from fastapi import APIRouter

from scoi.service.app import Service


def register(api: APIRouter, service: Service) -> None:
    return None
