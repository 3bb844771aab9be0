"""A loopback stand-in for the parts of Gitea that ``GitServerClient`` uses, over real git.

``/`` answers like Gitea's front page; ``/api/v1/user/repos`` lists the bare repositories under
``root/<user>/`` (basic auth required, 401 otherwise); ``/<user>/<repo>.git/...`` serves each bare
repository with git's "dumb" HTTP protocol (static files after ``git update-server-info``), also
behind basic auth, so cloning works only when git sends the client's stored credentials.
``make_bare_repo`` builds such a repository: main with two commits, a ``feature`` branch.
"""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

_GIT_ENV = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=_GIT_ENV, check=True, capture_output=True, text=True).stdout


def make_bare_repo(root: Path, user: str, name: str) -> dict[str, str]:
    """``root/<user>/<name>.git`` with commits ``first`` and ``second`` on main and ``feature``
    (one commit past first); returns their ids."""
    work = root / "_work" / name
    work.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=work)
    (work / "a.txt").write_text("one\n")
    git("add", "a.txt", cwd=work)
    git("commit", "-qm", "first", cwd=work)
    first = git("rev-parse", "HEAD", cwd=work).strip()
    git("checkout", "-qb", "feature", cwd=work)
    (work / "f.txt").write_text("feature\n")
    git("add", "f.txt", cwd=work)
    git("commit", "-qm", "feature work", cwd=work)
    feature = git("rev-parse", "HEAD", cwd=work).strip()
    git("checkout", "-q", "main", cwd=work)
    (work / "a.txt").write_text("two\n")
    git("commit", "-qam", "second", cwd=work)
    second = git("rev-parse", "HEAD", cwd=work).strip()
    bare = root / user / f"{name}.git"
    bare.parent.mkdir(parents=True, exist_ok=True)
    git("clone", "-q", "--bare", str(work), str(bare), cwd=root)
    git("update-server-info", cwd=bare)
    return {"first": first, "second": second, "feature": feature}


def make_gitea(root: Path, user: str, password: str) -> Starlette:
    seen: list[dict[str, Any]] = []

    def authorised(request: Request) -> bool:
        header = request.headers.get("authorization", "")
        seen.append({"path": request.url.path, "auth": bool(header)})
        if not header.startswith("Basic "):
            return False
        return base64.b64decode(header[6:]).decode() == f"{user}:{password}"

    def refuse() -> Response:
        return JSONResponse({"message": "Unauthorized"}, status_code=401,
                            headers={"WWW-Authenticate": 'Basic realm="Gitea"'})

    async def front(_request: Request) -> Response:
        return PlainTextResponse("Gitea: Git with a cup of tea")

    async def repos(request: Request) -> Response:
        if not authorised(request):
            return refuse()
        base = str(request.base_url).rstrip("/")
        return JSONResponse([{"name": p.name[:-4], "full_name": f"{user}/{p.name[:-4]}",
                              "clone_url": f"{base}/{user}/{p.name}", "description": f"the {p.name[:-4]} repo"}
                             for p in sorted((root / user).glob("*.git"))])

    async def files(request: Request) -> Response:
        if not authorised(request):
            return refuse()
        path = (root / request.path_params["owner"] / request.path_params["rest"]).resolve()
        if root.resolve() not in path.parents or not path.is_file():
            return PlainTextResponse("not found", status_code=404)
        return FileResponse(path)

    async def requests(_request: Request) -> Response:
        return JSONResponse(seen)

    return Starlette(routes=[Route("/", front), Route("/health", front), Route("/_requests", requests),
                             Route("/api/v1/user/repos", repos), Route("/{owner}/{rest:path}", files)])
