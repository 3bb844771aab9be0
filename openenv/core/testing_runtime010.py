"""0.10's runtime criteria for ``openenv validate --url`` and its JSON report shape.

0.10 probes six things (``openapi_version_available``, ``health_endpoint``, ``metadata_endpoint``,
``schema_endpoint``, ``mcp_endpoint``, ``mode_endpoint_consistency``) and reports
``{"target", "validation_type", "standard_version", "standard_profile", "mode", "passed",
"summary", "criteria"}``. :func:`report_json` gives that shape for any of our reports: the six
criteria (for a URL) with 0.10's verdicts, then every check of ours as a criterion too; our own
``ok``/``counts``/``checks`` keys stay beside them.
"""

from __future__ import annotations

from typing import Any

import httpx

from openenv.core.testing_report import FAIL, CheckReport

__all__ = ["RuntimeReport", "report_json", "runtime_criteria"]

RuntimeReport = dict[str, Any]


def _criterion(cid: str, description: str, passed: bool, expected: Any, actual: Any = None,
               details: str | None = None, required: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"id": cid, "description": description, "passed": passed, "required": required}
    if details is not None:
        out["details"] = details
    out["expected"] = expected
    if actual is not None:
        out["actual"] = actual
    return out


def _get_json(http: httpx.Client, method: str, url: str, **kw: Any) -> tuple[int | None, Any, str | None]:
    try:
        resp = http.request(method, url, **kw)
    except httpx.HTTPError as exc:
        return None, None, f"Request failed: {type(exc).__name__}: {exc}"
    try:
        return resp.status_code, resp.json(), None
    except ValueError:
        return resp.status_code, None, None


def _openapi(http: httpx.Client, base: str, report: RuntimeReport) -> tuple[dict[str, Any], dict[str, Any]]:
    code, body, err = _get_json(http, "GET", base + "/openapi.json")
    desc, expected = "GET /openapi.json returns OpenAPI info.version", {"status_code": 200, "info.version": "string"}
    info = body.get("info") if isinstance(body, dict) else None
    version = info.get("version") if isinstance(info, dict) else None
    if err:
        return _criterion("openapi_version_available", desc, False, expected, details=err), {}
    if code == 200 and isinstance(version, str):
        report["standard_version"] = version
        report["standard_profile"] = "openenv-http/1.x" if version.startswith("1.") else "openenv-http/unknown"
        paths = body.get("paths") if isinstance(body.get("paths"), dict) else {}
        return _criterion("openapi_version_available", desc, True, expected,
                          {"status_code": code, "info.version": version}), paths
    actual = {"status_code": code, "body_type": type(body).__name__ if body is not None else "non_json"}
    return _criterion("openapi_version_available", desc, False, expected, actual,
                      "Response missing required OpenAPI info.version field"), {}


def _fields(http: httpx.Client, base: str, path: str, cid: str, desc: str, keys: tuple[str, ...],
            kind: type) -> dict[str, Any]:
    code, body, err = _get_json(http, "GET", base + path)
    expected = {"status_code": 200, "fields": list(keys)}
    if err:
        return _criterion(cid, desc, False, expected, details=err)
    ok = code == 200 and isinstance(body, dict) and all(isinstance(body.get(k), kind) for k in keys)
    actual = {"status_code": code, **{k: (body.get(k) if kind is str else isinstance(body.get(k), kind))
                                      if isinstance(body, dict) else None for k in keys}}
    return _criterion(cid, desc, ok, expected, actual)


def runtime_criteria(base_url: str, *, timeout_s: float = 5.0, headers: dict[str, str] | None = None) -> RuntimeReport:
    """0.10's six runtime criteria against ``base_url`` with its verdicts, and its report keys.

    One difference, documented: a server with no ``/mcp`` route at all (404/405, a 0.3-style
    server) still fails ``mcp_endpoint`` as on 0.10, but that criterion is then not required.
    """
    base = base_url.rstrip("/")
    report: RuntimeReport = {"target": base, "validation_type": "running_environment", "standard_version": "unknown",
                             "standard_profile": "openenv-http/unknown", "mode": "unknown"}
    criteria: list[dict[str, Any]] = []
    with httpx.Client(timeout=timeout_s, headers=headers or {}, trust_env=False) as http:
        first, paths = _openapi(http, base, report)
        criteria.append(first)
        code, body, err = _get_json(http, "GET", base + "/health")
        expected = {"status_code": 200, "status": "healthy"}
        status = body.get("status") if isinstance(body, dict) else None
        criteria.append(_criterion("health_endpoint", "GET /health returns healthy status",
                                   not err and code == 200 and status == "healthy", expected,
                                   None if err else {"status_code": code, "status": status}, err))
        criteria.append(_fields(http, base, "/metadata", "metadata_endpoint", "GET /metadata returns name and description",
                                ("name", "description"), str))
        schema = _fields(http, base, "/schema", "schema_endpoint",
                         "GET /schema returns action, observation, and state schemas", ("action", "observation", "state"), dict)
        if "actual" in schema:
            schema["actual"] = {"status_code": schema["actual"]["status_code"],
                                **{f"has_{k}": bool(schema["actual"][k]) for k in ("action", "observation", "state")}}
        criteria.append(schema)
        code, body, err = _get_json(http, "POST", base + "/mcp", json={})
        rpc = body.get("jsonrpc") if isinstance(body, dict) else None
        criteria.append(_criterion("mcp_endpoint", "POST /mcp is reachable and returns JSON-RPC payload",
                                   not err and code == 200 and rpc == "2.0", {"status_code": 200, "jsonrpc": "2.0"},
                                   None if err else {"status_code": code, "jsonrpc": rpc}, err,
                                   required=code not in (404, 405)))
    desc = "OpenAPI endpoint set matches OpenEnv mode contract"
    if paths:
        has = {p: p in paths for p in ("/reset", "/step", "/state")}
        report["mode"] = "simulation" if has["/reset"] else "production"
        want = report["mode"] == "simulation"
        criteria.append(_criterion("mode_endpoint_consistency", desc, all(v == want for v in has.values()),
                                   {p: want for p in has}, has))
    else:
        criteria.append(_criterion("mode_endpoint_consistency", desc, False, {"openapi.paths": "present"},
                                   {"openapi.paths": "missing"}, "Cannot determine mode without OpenAPI paths"))
    report["criteria"] = criteria
    return report


def _summary(criteria: list[dict[str, Any]]) -> dict[str, Any]:
    required = [c for c in criteria if c.get("required", True)]
    return {
        "passed_count": sum(bool(c["passed"]) for c in criteria),
        "total_count": len(criteria),
        "failed_criteria": [c["id"] for c in criteria if not c["passed"]],
        "required_passed_count": sum(bool(c["passed"]) for c in required),
        "required_total_count": len(required),
    }


def report_json(report: CheckReport, runtime: RuntimeReport | None = None) -> dict[str, Any]:
    """0.10's report keys (``passed``, ``summary``, ``criteria``, and for a URL its target/profile/mode
    keys) with our checks as criteria after 0.10's six; ours (``ok``, ``counts``, ``checks``) beside."""
    ours = report.to_dict()
    criteria = list((runtime or {}).get("criteria", []))
    for r in report.results:
        item = {"id": r.name, "description": f"openenv-studio check {r.name}", "passed": r.status != FAIL,
                "required": True, "status": r.status}
        if r.message:
            item["details"] = r.message
        criteria.append(item)
    head = {k: v for k, v in (runtime or {}).items() if k != "criteria"} or {
        "target": report.target, "validation_type": "local_environment"}
    passed = all(c["passed"] for c in criteria if c.get("required", True))
    return {**head, "passed": passed, "summary": _summary(criteria), "criteria": criteria,
            "ok": ours["ok"], "counts": ours["counts"], "checks": ours["checks"]}
