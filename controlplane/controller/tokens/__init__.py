"""Delegation tokens (Kafka's DelegationTokenControlManager): create, renew, expire and the
sweep of expired tokens as records (`control`), who may see which token (`describe`) and the
controller handlers (`handlers`).
"""
