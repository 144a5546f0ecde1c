"""SCRAM credentials (Kafka's ScramControlManager, KIP-554): the mechanisms and their
arithmetic (`formatter`, RFC 5802 as Kafka's ScramFormatter does it), AlterUserScramCredentials
as records (`control`), DescribeUserScramCredentials over the credentials (`describe`) and the
controller handlers (`handlers`).
"""
