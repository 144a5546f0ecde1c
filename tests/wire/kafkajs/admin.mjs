// kafkajs's admin client, unmodified, against the listener: argv = bootstrap user token.
// Prints one JSON object of what each call answered (tests/wire/test_kafkajs.py checks it).
import kafkajs from "kafkajs";

const { Kafka, logLevel, ConfigResourceTypes, AclResourceTypes, AclOperationTypes,
  AclPermissionTypes, ResourcePatternTypes } = kafkajs;
const [bootstrap, username, password] = process.argv.slice(2);
const kafka = new Kafka({
  clientId: "kafkajs-conformance",
  brokers: [bootstrap],
  sasl: { mechanism: "plain", username, password },
  logLevel: process.env.KAFKAJS_DEBUG ? logLevel.DEBUG : logLevel.NOTHING,
  retry: { retries: 2 },
});
const admin = kafka.admin();
const out = {};
const errorOf = async (call) => {
  try { await call(); return null; } catch (e) {
    // KafkaJSAggregateError holds the errors; a retriable one gives up with its cause.
    const inner = e.errors && e.errors.length ? e.errors[0] : e.cause || e.originalError || e;
    return inner.type || inner.name;
  }
};
await admin.connect();
out.created = await admin.createTopics({
  topics: [{ topic: "js-orders", numPartitions: 3, replicationFactor: 3 }],
  waitForLeaders: false,
});
// kafkajs answers a topic that exists with `false` (TOPIC_ALREADY_EXISTS), not an error.
out.duplicate = await admin.createTopics({
  topics: [{ topic: "js-orders", numPartitions: 1, replicationFactor: 1 }],
});
out.too_wide = await errorOf(() => admin.createTopics({
  topics: [{ topic: "js-wide", numPartitions: 1, replicationFactor: 5 }],
}));
out.listed = (await admin.listTopics()).sort();
const metadata = await admin.fetchTopicMetadata({ topics: ["js-orders"] });
out.partitions = metadata.topics[0].partitions.length;
await admin.createPartitions({ topicPartitions: [{ topic: "js-orders", count: 5 }] });
out.partitions_after = (await admin.fetchTopicMetadata({ topics: ["js-orders"] })).topics[0]
  .partitions.length;
const configs = await admin.describeConfigs({
  includeSynonyms: false,
  resources: [{ type: ConfigResourceTypes.TOPIC, name: "js-orders" }],
});
out.config_names = configs.resources[0].configEntries.map((e) => e.configName);
await admin.alterConfigs({
  validateOnly: false,
  resources: [{ type: ConfigResourceTypes.TOPIC, name: "js-orders",
    configEntries: [{ name: "retention.ms", value: "5400000" }] }],
});
const acl = { resourceType: AclResourceTypes.TOPIC, resourceName: "js-orders",
  resourcePatternType: ResourcePatternTypes.LITERAL, principal: "User:dave", host: "*",
  operation: AclOperationTypes.READ, permissionType: AclPermissionTypes.ALLOW };
await admin.createAcls({ acl: [acl] });
out.acls = (await admin.describeAcls({ resourceType: AclResourceTypes.ANY,
  resourcePatternType: ResourcePatternTypes.ANY, operation: AclOperationTypes.ANY,
  permissionType: AclPermissionTypes.ANY, principal: "User:dave" })).resources
  .map((r) => r.resourceName);
await admin.deleteAcls({ filters: [{ resourceType: AclResourceTypes.ANY,
  resourcePatternType: ResourcePatternTypes.ANY, operation: AclOperationTypes.ANY,
  permissionType: AclPermissionTypes.ANY, principal: "User:dave" }] });
const cluster = await admin.describeCluster();
out.brokers = cluster.brokers.map((b) => b.nodeId).sort();
out.controller = cluster.controller;
out.unknown = await errorOf(() => admin.deleteTopics({ topics: ["js-none"], timeout: 5000 }));
await admin.deleteTopics({ topics: ["js-orders"], timeout: 5000 });
out.listed_after = (await admin.listTopics()).sort();
await admin.disconnect();
console.log(JSON.stringify(out));
