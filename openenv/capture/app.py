"""The capture proxy as an ASGI app: OpenAI chat completions, Anthropic Messages, OpenAI
Responses and Google generateContent in front of an OpenAI-compatible engine, each call captured (token ids, logprobs) into its session's graph and,
when a store is given, into the episode store as it completes.

Routes: ``GET /health``; the trainer's control plane ``POST /sessions`` (mint a rollout id: the
harness's API key), ``GET /sessions``, ``GET /sessions/{id}``, ``GET /sessions/{id}/rollout`` (the
training document), ``DELETE /sessions/{id}`` — behind ``admin_key`` when one is set, as in OpenEnv
0.10; the harness's data plane ``GET /v1/models``, ``POST /v1/chat/completions``, ``POST /v1/messages``,
``POST /v1/responses``, ``POST /v1beta/models/{model}:generateContent`` (and
``:streamGenerateContent``, ``:countTokens``).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time
import uuid
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from openenv.core.origin_policy import OriginGuard, OriginPolicy

from .checks import check_turn, check_turn_eval
from .dialect_google import google_reply, google_sse, google_to_chat
from .dialect_responses import responses_reply, responses_sse, responses_to_chat
from .dialects import anthropic_reply, anthropic_sse, anthropic_to_chat, chat_sse
from .document import rollout_document
from .engine import (
    CAPTURE_LEVELS,
    SAMPLING_KEYS,
    EngineClient,
    UpstreamError,
    prepare_request,
    truncating_params,
)
from .estimate import approximate_token_count
from .graph import TurnNode
from .jsonio import dumps_json, loads_json
from .recording import CaptureRecorder, turn_record
from .sessions import RESERVED_METADATA, CaptureSession, SessionRegistry, api_key_of, harness_session_of
from .upstreams import Engine, EnginePool, engine_key, upstream_spec

__all__ = ["create_capture_app"]

log = logging.getLogger("openenv.capture")
_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
_MAX_BODY = 32 * 1024 * 1024


def _error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind}}, status_code=status)


def _system_digest(messages: list[Any]) -> str | None:
    for m in messages or []:
        if isinstance(m, dict) and m.get("role") == "system":
            content = m.get("content")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            if isinstance(content, str) and content:
                return hashlib.sha256(content.encode()).hexdigest()[:16]
    return None


def create_capture_app(*, llm_url: str, model: str | None = None, level: str = "tokens", api_key: str | None = None,
                       auth_header: str = "Authorization", admin_key: str | None = None,
                       require_registered: bool = True, max_output_tokens: int | None = 8192,
                       max_model_calls: int = 0, store: Any = None, label: str | None = None,
                       allowed_llm_urls: Iterable[str] = (), origin_policy: OriginPolicy | None = None) -> FastAPI:
    """The proxy (see the module docstring). ``api_key`` is the engine's and never leaves the
    process; ``store`` (an ``EpisodeStore``) records every session as an episode.

    A session may name its own engine (``llm_url``) only when it is ``llm_url`` or in
    ``allowed_llm_urls`` (``"*"``: any), and only with the admin key when one is set. Requests
    pass ``origin_policy`` (default: ``OPENENV_ALLOW_*``; see ``openenv.core.origin_policy``)."""
    if level not in CAPTURE_LEVELS:
        raise ValueError(f"level must be one of {', '.join(CAPTURE_LEVELS)}, not {level!r}")
    engine = EngineClient(llm_url, model=model, api_key=api_key, auth_header=auth_header)
    pool = EnginePool(Engine(engine, level, model, engine.base_url),
                      frozenset(u if u.strip() == "*" else engine_key(u) for u in allowed_llm_urls if u.strip()))

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        await pool.aclose()

    app = FastAPI(title="openenv-capture", docs_url=None, redoc_url=None, lifespan=lifespan)
    app.add_middleware(OriginGuard, policy=origin_policy if origin_policy is not None else OriginPolicy.from_env())
    registry = SessionRegistry(require_registered=require_registered)
    recorder = CaptureRecorder(store, label=label, info={"llm_url": engine.base_url, "model": model, "level": level}) \
        if store is not None else None
    writer = asyncio.Lock()  # one store write at a time, in arrival order
    app.state.registry, app.state.engine, app.state.recorder = registry, engine, recorder
    app.state.upstreams = pool
    app.state.instance_id = uuid.uuid4().hex

    async def _store(fn: Any, *args: Any, **kwargs: Any) -> Any:
        async with writer:
            return await asyncio.to_thread(fn, *args, **kwargs)

    def _admin_ok(request: Request) -> bool:
        return not admin_key or hmac.compare_digest((api_key_of(dict(request.headers)) or "").encode(), admin_key.encode())

    def _forbidden() -> JSONResponse:
        return _error(401, "this route requires the capture admin key")

    async def _episode_of(session: CaptureSession) -> None:
        if recorder is not None and session.episode_id is None:
            session.episode_id = await _store(recorder.open_session, session.session_id, session.metadata)

    @app.get("/health")
    async def health(request: Request) -> dict[str, Any]:
        return {"status": "ok", "instance": app.state.instance_id, "upstream": engine.base_url, "model": model,
                "sessions": len(registry.list_ids()), "require_registered": require_registered,
                "capture_level": level, "rollout_type": "train" if level == "tokens" else "eval",
                "upstream_auth": bool(api_key), "recording": recorder is not None,
                "upstreams": pool.known() if _admin_ok(request) else []}

    @app.post("/sessions")
    async def create_session(request: Request) -> Any:
        if not _admin_ok(request):
            return _forbidden()
        try:
            payload = await request.json() if await request.body() else {}
        except ValueError:
            return _error(400, "body must be JSON")
        if not isinstance(payload, dict):
            return _error(400, "body must be a JSON object")
        metadata = payload.get("metadata") or {}
        if not isinstance(metadata, dict):
            return _error(400, "metadata must be a JSON object")
        reserved = RESERVED_METADATA & metadata.keys()
        if reserved:
            return _error(400, f"metadata cannot include reserved key(s): {', '.join(sorted(reserved))}")
        try:
            spec = upstream_spec(payload)
        except ValueError as exc:
            return _error(400, str(exc))
        try:
            eng = await pool.resolve(spec)
        except PermissionError as exc:
            return _error(403, str(exc), "permission_error")
        except RuntimeError as exc:
            return _error(502, f"the engine at {spec.llm_url if spec else llm_url} cannot be used: {exc}", "upstream_error")
        try:
            session = registry.create(payload.get("session_id"), purpose=payload.get("purpose", "auto"),
                                      max_model_calls=payload.get("max_model_calls", max_model_calls), **metadata)
        except ValueError as exc:
            return _error(400, str(exc))
        session.engine = eng if spec is not None else None
        await _episode_of(session)
        return {"session_id": session.session_id, "capture_level": eng.level,
                "rollout_type": "train" if eng.level == "tokens" and session.purpose != "eval" else "eval",
                "max_model_calls": session.max_model_calls, "llm_url": eng.llm_url, "model": eng.model,
                **({"episode_id": session.episode_id} if session.episode_id else {})}

    @app.get("/sessions")
    async def list_sessions(request: Request) -> Any:
        return {"sessions": registry.summary()} if _admin_ok(request) else _forbidden()

    @app.get("/sessions/{session_id}")
    async def session_status(session_id: str, request: Request) -> Any:
        if not _admin_ok(request):
            return _forbidden()
        s = registry.get(session_id)
        if s is None:
            return JSONResponse({"error": "unknown session"}, status_code=404)
        return {"session_id": session_id, "idle_s": round(s.idle_seconds, 1), "upstream_errors": s.upstream_errors,
                **s.graph.stats(), **({"episode_id": s.episode_id} if s.episode_id else {})}

    @app.get("/sessions/{session_id}/rollout")
    async def rollout(session_id: str, request: Request, include_discarded: bool = False,
                      include_messages: bool = False) -> Any:
        if not _admin_ok(request):
            return _forbidden()
        s = registry.get(session_id)
        if s is None:
            return JSONResponse({"error": "unknown session"}, status_code=404)
        return rollout_document(s.graph, session_id=s.session_id, metadata=s.metadata, findings=s.findings,
                                capture_level=(s.engine or pool.default).level, purpose=s.purpose,
                                budget_stop_count=s.budget_stop_count,
                                include_discarded=include_discarded, include_messages=include_messages)

    @app.delete("/sessions/{session_id}")
    async def delete_session(session_id: str, request: Request) -> Any:
        if not _admin_ok(request):
            return _forbidden()
        s = registry.get(session_id)
        deleted = registry.delete(session_id)
        if s is not None and s.episode_id and recorder is not None:
            await _store(recorder.end_session, s.episode_id, "closed")
        return {"deleted": deleted}

    @app.get("/v1/models")
    async def models(request: Request) -> Any:
        if admin_key and not _admin_ok(request) and registry.resolve(dict(request.headers)) is None:
            return _error(401, "GET /v1/models needs a session id or the capture admin key as the API key")
        return await engine.models()

    async def _body(request: Request) -> dict[str, Any] | JSONResponse:
        raw = await request.body()
        if len(raw) > _MAX_BODY:
            return _error(413, f"request body over {_MAX_BODY // (1024 * 1024)} MB")
        try:
            body = loads_json(raw)
        except ValueError:
            return _error(400, "body must be JSON")
        return body if isinstance(body, dict) else _error(400, "body must be a JSON object")

    async def _complete(request: Request, chat: dict[str, Any], session: CaptureSession, api_type: str) -> Any:
        """Forward one chat request, capture it; the engine's reply body (or an error answer)."""
        if chat.get("n", 1) != 1:
            return _error(400, "capture supports exactly one completion per request (n=1)")
        if not isinstance(chat.get("messages"), list):
            return _error(400, "messages must be a list")
        eng = session.engine or pool.default
        level = eng.level
        if eng.model:
            chat["model"] = eng.model
        requested = {k: chat[k] for k in SAMPLING_KEYS if k in chat}
        sent = prepare_request(chat, level, max_output_tokens=max_output_tokens)
        session.model_calls += 1
        try:
            reply = await eng.client.chat(sent)
        except UpstreamError as exc:
            session.upstream_errors += 1
            detail = exc.body.get("error") if isinstance(exc.body, dict) else None
            message = (detail.get("message") if isinstance(detail, dict) else None) or str(exc)
            return _error(exc.status, f"upstream: {message}", "upstream_error")
        if not (reply.body.get("choices") or []):
            session.upstream_errors += 1
            return _error(502, "upstream: the engine answered no choices", "upstream_error")
        index = session.graph.stats()["n_turns"]
        report = (check_turn(reply.prompt_ids, reply.sampled_ids, reply.logprobs, finish_reason=reply.finish_reason, index=index)
                  if level == "tokens" else check_turn_eval(reply.message, finish_reason=reply.finish_reason, index=index))
        findings = reply.findings + [str(f) for f in report.findings]
        logprobs = reply.logprobs if report.ok else None
        if level == "tokens" and truncating_params(requested) and "sampling_overridden" not in session.metadata:
            session.metadata["sampling_overridden"] = truncating_params(requested)
            findings.append("[WARN] sampling_neutralised: the harness asked for "
                            + ", ".join(f"{k}={v}" for k, v in sorted(truncating_params(requested).items()))
                            + "; sent at their no-op values so the logprobs are the sampling policy's")
        session.findings += findings
        node = session.graph.add_turn(TurnNode(
            node_id=uuid.uuid4().hex[:12], prompt_ids=reply.prompt_ids, sampled_ids=reply.sampled_ids,
            sampled_logprobs=list(logprobs) if logprobs else None, model=sent.get("model"),
            finish_reason=reply.finish_reason, harness_session_id=harness_session_of(dict(request.headers), chat),
            system_digest=_system_digest(chat["messages"]), n_tools=len(chat.get("tools") or []),
            request_messages=loads_json(dumps_json(chat["messages"])), request_tools=chat.get("tools"),
            sampling_params={k: sent[k] for k in SAMPLING_KEYS if sent.get(k) is not None},
            requested_sampling_params=requested, response_message=reply.message))
        session.last_turn_at = time.time()
        session.metadata.setdefault("api_type", api_type)
        if recorder is not None:
            await _episode_of(session)
            try:
                await _store(recorder.record_call, session.episode_id,
                             turn_record(node, session_id=session.session_id, latency_ms=reply.latency_ms,
                                         usage=reply.usage, level=level, findings=findings,
                                         sampled_tokens=reply.sampled_tokens))
            except Exception as exc:  # the call was captured in memory; say it did not reach the store
                log.exception("recording a captured call failed")
                session.findings.append(f"[FATAL] capture_record_failed: {type(exc).__name__}: {exc}")
        return reply.body

    def _session_or_401(request: Request) -> CaptureSession | JSONResponse:
        session = registry.resolve(dict(request.headers))
        if session is None:
            return _error(401, "unknown API key; register a session via POST /sessions")
        return session

    @app.post("/v1/chat/completions")
    @app.post("/chat/completions")
    async def chat_completions(request: Request) -> Any:
        body = await _body(request)
        if isinstance(body, JSONResponse):
            return body
        session = _session_or_401(request)
        if isinstance(session, JSONResponse):
            return session
        if session.over_budget:
            session.budget_stop_count += 1
            reply: Any = {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "model": model,
                          "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": "Model-call budget reached; stopping."}}]}
        else:
            reply = await _complete(request, dict(body), session, "openai_chat")
            if isinstance(reply, JSONResponse):
                return reply
        if body.get("stream"):
            return StreamingResponse(chat_sse(reply), media_type="text/event-stream", headers=_SSE_HEADERS)
        return Response(dumps_json(reply), media_type="application/json")

    async def _translated(request: Request, to_chat: Any, from_chat: Any, sse: Any, api_type: str) -> Any:
        """A dialect translated to chat for the engine and back, as JSON or the SSE it asked for."""
        body = await _body(request)
        if isinstance(body, JSONResponse):
            return body
        session = _session_or_401(request)
        if isinstance(session, JSONResponse):
            return session
        try:
            chat = to_chat(body)
        except ValueError as exc:
            return _error(400, str(exc))
        reply = await _complete(request, chat, session, api_type)
        if isinstance(reply, JSONResponse):
            return reply
        answer = from_chat(reply, body.get("model"))
        if body.get("stream"):
            return StreamingResponse(sse(answer), media_type="text/event-stream", headers=_SSE_HEADERS)
        return JSONResponse(answer)

    @app.post("/v1/messages")
    async def messages(request: Request) -> Any:
        return await _translated(request, anthropic_to_chat, anthropic_reply, anthropic_sse, "anthropic")

    @app.post("/v1/responses")
    @app.post("/responses")
    async def responses(request: Request) -> Any:
        return await _translated(request, responses_to_chat, responses_reply, responses_sse, "openai_responses")

    @app.post("/v1beta/models/{target}")
    @app.post("/v1/models/{target}")
    async def generate_content(request: Request, target: str) -> Any:
        model_name, _, method = target.rpartition(":")
        if method not in ("generateContent", "streamGenerateContent", "countTokens") or not model_name:
            return _error(404, f"/{target} is not served here: use {{model}}:generateContent or :streamGenerateContent")
        body = await _body(request)
        if isinstance(body, JSONResponse):
            return body
        if method == "countTokens":
            return JSONResponse({"totalTokens": approximate_token_count(body)})
        headers = dict(request.headers)
        if "key" in request.query_params and not api_key_of(headers):
            headers["x-goog-api-key"] = request.query_params["key"]
        session = registry.resolve(headers)
        if session is None:
            return _error(401, "unknown API key; register a session via POST /sessions")
        try:
            chat = google_to_chat(body, model_name)
        except ValueError as exc:
            return _error(400, str(exc))
        reply = await _complete(request, chat, session, "google")
        if isinstance(reply, JSONResponse):
            return reply
        response = google_reply(reply)
        if method == "streamGenerateContent":
            return StreamingResponse(google_sse(response), media_type="text/event-stream", headers=_SSE_HEADERS)
        return JSONResponse(response)

    @app.post("/{path:path}")
    async def unknown(path: str) -> Any:
        return _error(404, f"/{path} is not served here: use /v1/chat/completions, /v1/messages, /v1/responses or "
                      "/v1beta/models/{model}:generateContent")

    return app
