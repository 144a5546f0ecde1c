"""What the active controller's timer does for mirror flows: expire members whose session
lapsed (a new generation without them), reading their last heartbeats from the member store."""

from __future__ import annotations

import logging

from controlplane.runtime.controller import ControllerRuntime
from controlplane.runtime.conversation import ControllerEvent
from controlplane.runtime.lease import now_ms
from mirror.members import contacts_of, member_store
from mirror.services import mirror_members_forget

logger = logging.getLogger("mirror.groups")


def mirror_members_expire(runtime: ControllerRuntime) -> None:
    image = runtime.image
    if image is None:
        return
    flows = {k: g for k, g in dict(image.mirror_image.flows).items() if g.members}
    if not flows:
        return
    contacts = contacts_of(member_store().reports(f"{s}->{t}" for s, t in flows))
    now = now_ms()
    due = any(
        now - max(m.joined_ms, contacts[f"{s}->{t}"].get(m.member_id, 0)) > m.session_timeout_ms
        for (s, t), group in flows.items()
        for m in group.members
    )
    if not due:
        return
    response = runtime.handle(
        ControllerEvent("ExpireMirrorMembers", payload={"contacts": contacts})
    ).response
    expired = response.get("expired_members") or {}
    if expired:
        logger.info("mirror members whose session lapsed left their groups: %s", expired)
        mirror_members_forget(expired=expired)
