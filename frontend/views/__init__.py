"""The browser admin UI's views, one module per area (the URLs name them in `frontend.urls`).

Every page is `frontend/page.html` around one fragment template; `?partial=1` answers the
fragment alone (with the `X-UI-Fragment` header), which `ui.js` swaps in every 2 s. Pages read
through the domains' selectors; every write is the public API's own request, sent by
`frontend.writes.rpc_call`.
"""
