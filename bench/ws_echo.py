"""A WebSocket that sends every binary frame straight back: the portal's relay with nothing behind it.

bench/terminal.py and bench/k8s_terminal.py time keys through it, on uvicorn run as `make demo` runs the portal, to
print the floor that the two loopback hops and the ASGI server set under any terminal relayed by the portal.
"""


async def app(scope, receive, send):
    if scope["type"] != "websocket":  # run with --lifespan off; plain HTTP is not served
        return
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    while (message := await receive())["type"] == "websocket.receive":
        await send({"type": "websocket.send", "bytes": message.get("bytes") or b""})
