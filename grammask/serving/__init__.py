"""`grammask serve`: an OpenAI-compatible HTTP server (FastAPI, uvicorn: the `server` extra) over a
continuously batched decode loop. `app` is the HTTP layer, `scheduler` the decode loop, `protocol`,
`formats` and `tools` the request side. Importing this package imports neither FastAPI nor torch."""
