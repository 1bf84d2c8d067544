"""Environments a task deploys: each is a real process on loopback with a JSON tool API.

Every env serves `GET /tools` (OpenAI function schemas), `POST /tools/<name>` (call one), `POST /load`
(data from a file), `GET /state` (what verifiers and snapshots read) and `GET /health`, behind a
bearer token the run keeps out of the context.
"""
