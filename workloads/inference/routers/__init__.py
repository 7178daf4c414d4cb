"""The server's HTTP API, one router per dialect it speaks: `ollama` (/api/…), `openai` (/v1/…) and `ops`
(/healthz, /metrics). Each route reads its body and engine through `dependencies`, admits the prompt through
`generation`, and only says how its dialect writes a reply.
"""
