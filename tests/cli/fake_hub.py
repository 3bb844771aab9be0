"""A loopback stand-in for the Hugging Face Hub's HTTP API, as much of it as ``openenv push`` and
``openenv fork`` speak through ``huggingface_hub``: whoami, repo creation, preupload + commit
(ndjson, base64 files), Space variables and secrets, Space duplication. Every request is recorded."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

TOKEN = "hf_loopback_token"
USER = "alice"


@dataclass
class FakeHub:
    calls: list[tuple[str, str, Any]] = field(default_factory=list)
    repos: dict[str, dict[str, Any]] = field(default_factory=dict)  # "spaces/alice/x" -> {files, variables, ...}

    def _authorized(self, request: Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {TOKEN}"

    async def _record(self, request: Request) -> Any:
        body = await request.body()
        try:
            data: Any = json.loads(body) if body else None
        except ValueError:
            data = body.decode(errors="replace")
        self.calls.append((request.method, request.url.path, data))
        return data

    def app(self) -> Starlette:
        async def whoami(request: Request) -> Response:
            await self._record(request)
            if not self._authorized(request):
                return JSONResponse({"error": "Invalid credentials in Authorization header"}, status_code=401)
            return JSONResponse({"type": "user", "name": USER, "fullname": "Alice", "orgs": [], "auth": {}})

        async def create(request: Request) -> Response:
            data = await self._record(request)
            if not self._authorized(request):
                return JSONResponse({"error": "Unauthorized"}, status_code=401)
            repo = f"{data.get('organization') or USER}/{data['name']}"
            key = f"{data.get('type', 'model')}s/{repo}"
            if key in self.repos:
                return JSONResponse({"error": "You already created this space repo", "url": f"/spaces/{repo}"},
                                    status_code=409)
            self.repos[key] = {"files": {}, "variables": {}, "secrets": {}, "create": data}
            return JSONResponse({"url": f"{request.base_url}spaces/{repo}", "name": repo, "id": repo})

        async def preupload(request: Request) -> Response:
            data = await self._record(request)
            files = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False, "oid": None}
                     for f in data.get("files", [])]
            return JSONResponse({"files": files, "commitOid": "0" * 40})

        async def commit(request: Request) -> Response:
            body = (await request.body()).decode()
            self.calls.append((request.method, request.url.path, "ndjson"))
            kind, owner, name = request.path_params["kind"], request.path_params["owner"], request.path_params["name"]
            repo = self.repos.setdefault(f"{kind}/{owner}/{name}", {"files": {}, "variables": {}, "secrets": {}})
            for line in body.splitlines():
                item = json.loads(line)
                if item["key"] == "file":
                    repo["files"][item["value"]["path"]] = base64.b64decode(item["value"]["content"])
                elif item["key"] == "deletedFile":
                    repo["files"].pop(item["value"]["path"], None)
            oid = "1" * 40
            return JSONResponse({"commitUrl": f"{request.base_url}{kind}/{owner}/{name}/commit/{oid}",
                                 "commitOid": oid, "pullRequestUrl": None})

        async def tree(request: Request) -> Response:
            await self._record(request)
            kind, owner, name = request.path_params["kind"], request.path_params["owner"], request.path_params["name"]
            files = self.repos.get(f"{kind}/{owner}/{name}", {}).get("files", {})
            return JSONResponse([{"type": "file", "path": p, "size": len(b), "oid": "2" * 40} for p, b in files.items()])

        async def setting(request: Request) -> Response:
            data = await self._record(request)
            where = request.path_params["what"]  # variables | secrets
            repo = self.repos.setdefault(f"spaces/{request.path_params['owner']}/{request.path_params['name']}",
                                         {"files": {}, "variables": {}, "secrets": {}})
            repo[where][data["key"]] = data["value"]
            return JSONResponse({k: {"value": v} for k, v in repo["variables"].items()} if where == "variables" else {})

        async def duplicate(request: Request) -> Response:
            data = await self._record(request)
            if not self._authorized(request):
                return JSONResponse({"error": "Unauthorized"}, status_code=401)
            source = f"{request.path_params['owner']}/{request.path_params['name']}"
            if f"spaces/{source}" not in self.repos:
                return JSONResponse({"error": f"Space {source} not found"}, status_code=404)
            target = data["repository"]
            self.repos[f"spaces/{target}"] = {"files": dict(self.repos[f"spaces/{source}"]["files"]),
                                              "variables": {}, "secrets": {}, "duplicate": data}
            return JSONResponse({"url": f"{request.base_url}spaces/{target}"})

        async def validate_yaml(request: Request) -> Response:
            data = await self._record(request)
            import yaml

            try:
                meta = yaml.safe_load(data["content"].split("---")[1]) if data["content"].startswith("---") else {}
            except (yaml.YAMLError, IndexError) as exc:
                return JSONResponse({"errors": [{"message": str(exc)}], "warnings": []}, status_code=400)
            if data.get("repoType") == "space" and not isinstance(meta, dict) or "sdk" not in (meta or {}):
                return JSONResponse({"errors": [{"message": "a Space README needs sdk"}], "warnings": []},
                                    status_code=400)
            return JSONResponse({"errors": [], "warnings": []})

        async def health(request: Request) -> Response:
            return JSONResponse({"status": "ok"})  # for tests.server_utils.running_server

        return Starlette(routes=[
            Route("/health", health),
            Route("/api/whoami-v2", whoami),
            Route("/api/validate-yaml", validate_yaml, methods=["POST"]),
            Route("/api/repos/create", create, methods=["POST"]),
            Route("/api/{kind}/{owner}/{name}/preupload/{rev}", preupload, methods=["POST"]),
            Route("/api/{kind}/{owner}/{name}/commit/{rev}", commit, methods=["POST"]),
            Route("/api/{kind}/{owner}/{name}/tree/{rev:path}", tree),
            Route("/api/spaces/{owner}/{name}/duplicate", duplicate, methods=["POST"]),
            Route("/api/spaces/{owner}/{name}/{what}", setting, methods=["POST"]),
        ])
