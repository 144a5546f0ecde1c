"""ACLs: Kafka's bindings, filters and their matching (`bindings`), the StandardAuthorizer's
decision (`authorizer`), CreateAcls and DeleteAcls as records (`control`, Kafka's
AclControlManager) and the controller handlers (`handlers`).
"""
