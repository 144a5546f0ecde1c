"""Dynamic configs (Kafka's ConfigurationControlManager): the config resources and that they
exist (`resources`), AlterConfigs and IncrementalAlterConfigs as ConfigRecords (`control`),
DescribeConfigs (`describe`) and the controller handlers (`handlers`).

The keys themselves, their types and the effective value of one (`ConfigView`) are the config
schema (`controlplane.controller.config_schema`), which every domain reads.
"""
