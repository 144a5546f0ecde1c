"""The controller runtime: the lease, the active controller and its event loop, the one commit
(metadata log and projections, bulk SQL), the request channel, broker sessions and the
single-writer guard. Below the apps; above the pure core (`controlplane.controller`)."""
