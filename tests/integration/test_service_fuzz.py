"""Every route of the REST API fuzzed from its own OpenAPI schema (schemathesis, on the ASGI app): with no key, a
reader's, a global editor's and on a server without keys, no answer is a 5xx, and every 4xx carries the error body
the API documents, ``{"error": {"code", "message"}}``."""

from __future__ import annotations

import collections
import itertools

import pytest
import schemathesis
from conftest import FAST_MODEL
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable

from kbflow.config import Settings
from kbflow.lake import Lake
from kbflow.pipeline import ingest
from kbflow.records import Source
from kbflow.service.app import create_app
from kbflow.service.core import Service
from kbflow.usage.keys import create_key

#: (caller, status) -> answers seen; the closing summary of a run
SEEN: collections.Counter = collections.Counter()


@pytest.fixture(scope="module", params=["keyless", "anonymous", "reader", "editor"])
def served(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"fuzz-{request.param}")
    (root / "docs").mkdir()
    (root / "docs" / "a.md").write_text("# Fuzz\n\nA page about lighthouses, harbours and tides.\n")
    lake = Lake(str(root / "lake"))
    lake.register(Source("docs", "docs", str(root / "docs"), scope="acme"))
    settings = Settings.coerce(None, lake=lake.uri, model=FAST_MODEL)
    assert ingest(lake, settings).ok
    headers = {}
    if request.param != "keyless":
        reader = create_key(lake, "acme", "reader")[1]
        editor = create_key(lake, "global", "editor")[1]
        token = {"reader": reader, "editor": editor}.get(request.param)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
    service = Service(lake, settings, source_roots=[str(root)])
    app = create_app(service, mcp=False, web=False, allow_hosts=["testserver"])  # the ASGI client's Host
    return request.param, app, headers


#: examples per operation, caller and mode (valid inputs, then invalid ones)
EXAMPLES = 25


def test_no_route_answers_5xx_and_every_4xx_is_the_documented_error(served):
    caller, app, headers = served
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 12, [op.label for op in operations]
    for operation, mode in itertools.product(operations, schemathesis.GenerationMode):  # valid and invalid inputs

        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
        @given(operation.as_strategy(mode))
        def fuzz(case):
            response = case.call(headers=headers)
            SEEN[(caller, response.status_code)] += 1
            where = (case.method, case.formatted_path, response.status_code, response.text[:300])
            assert response.status_code < 500, where
            if response.status_code >= 400:
                body = response.json()
                assert set(body) == {"error"} and {"code", "message"} <= set(body["error"]), where
                assert isinstance(body["error"]["message"], str) and body["error"]["message"], where

        try:
            fuzz()
        except Unsatisfiable:  # an operation with no input to get wrong (GET /v1/health)
            assert mode is schemathesis.GenerationMode.NEGATIVE, operation.label


def test_the_fuzzing_reached_every_caller():
    """Runs after the fuzzing (file order): each caller was answered, and a stranger was told to sign in."""
    if not SEEN:
        pytest.skip("the fuzzing did not run in this session (selected alone)")
    callers = {caller for caller, _ in SEEN}
    assert callers == {"keyless", "anonymous", "reader", "editor"}, SEEN
    assert SEEN[("anonymous", 401)] > 0
    print(f"\nfuzzed: {sum(SEEN.values())} requests; by caller and status: {dict(sorted(SEEN.items()))}")
