"""The house's roof: the URL roots and front doors above the apps.

The two listeners' URL confs (`shell.urls`, `shell.urls_internal`) and the views every front
door shares (`shell.api`) route to every app, so they live above them: nothing in `controlplane`
(the foundation) imports an app.
"""
