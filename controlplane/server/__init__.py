"""The control plane's HTTP server: gunicorn's arbiter with an asyncio worker of our own.

`gunicorn controlplane.wsgi:application --worker-class
controlplane.server.worker.ControlPlaneWorker` runs, in each worker process, uvicorn's HTTP/1.1
protocol (httptools) on an event loop, one server per listener (public, internal), each with a
thread pool of its own (`--threads` threads) in which Django answers. Why not gunicorn's gthread
worker: it gives every half-sent request a thread and no header deadline, so 20 slow
connections can freeze the server and the brokers' heartbeats with it. Here a connection
costs a thread only while Django answers it:

- a request's headers must arrive within `CP_HTTP_HEADER_TIMEOUT_S` of its first byte (or of the
  connection), its body within `CP_HTTP_BODY_TIMEOUT_S`; idle keep-alive connections close after
  gunicorn's `--keep-alive` (on the internal listener, at least three heartbeat intervals and
  5 s: a broker's pooled connection is never closed just as it is reused). A slow client gets
  408 and its connection is closed;
- the internal listener (the brokers' lifeline) has its own pool, so the public listener's load,
  however slow, never queues a heartbeat behind it; and within it, metadata fetches have a pool
  of their own, and so do heartbeats and registrations (`CP_HEARTBEAT_THREADS`), so neither 60
  brokers fetching a large commit nor writes waiting for a busy controller queue a heartbeat;
- bodies arrive whole (chunked or not) before Django sees them, with their Content-Length; a body
  over `CP_MAX_BODY_BYTES` is 413;
- a metadata long-poll with nothing to answer yet waits on the event loop, not in a thread.
"""
