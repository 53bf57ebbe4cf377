"""docker/ files: no Docker engine runs here, so check what can be checked statically."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_compose_services_and_wiring():
    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
    services = compose["services"]
    assert {"db", "migrate", "worker"} <= set(services)
    assert "pgvector" in services["db"]["image"]
    assert services["worker"]["command"][0] == "worker"
    assert services["migrate"]["command"] == ["db", "upgrade"]
    url = services["worker"]["environment"]["SCOI_DATABASE_URL"]
    assert url.startswith("postgresql://") and "@db:5432/" in url
    assert services["worker"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"


def test_dockerfile_copies_existing_paths_and_pins_cpu_torch():
    text = (ROOT / "docker" / "Dockerfile").read_text()
    for line in text.splitlines():
        if line.startswith("COPY "):
            for src in line.split()[1:-1]:
                assert (ROOT / src).exists(), f"Dockerfile copies missing {src}"
    assert "torch==2.13.0" in text
    assert 'ENTRYPOINT ["scoi"]' in text
