// What a Kafka release's own classes say about itself, as JSON on stdout: which APIs a broker
// forwards to its controller (ApiKeys.forwardable), every metadata.version level with the
// record versions it writes, and every production feature with its levels' dependencies.
// Run from the release's jars, unmodified (Java's single-file launch, nothing compiled into
// them): `java -cp 'var/kafka/4.4.0/libs/*' devtools/kafka_facts/KafkaFacts.java`.
// devtools.kafka_conformance reads it; so do the tests that hold our tables to Kafka's.

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

public class KafkaFacts {
    static String q(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    static Object call(Object target, String method) {
        try {
            Method m = target.getClass().getMethod(method);
            return m.invoke(target);
        } catch (Exception e) {
            return null;  // a method this release does not have
        }
    }

    public static void main(String[] args) throws Exception {
        StringBuilder out = new StringBuilder("{\"apis\": [");
        Class<?> apiKeys = Class.forName("org.apache.kafka.common.protocol.ApiKeys");
        List<String> items = new ArrayList<>();
        for (Object key : apiKeys.getEnumConstants()) {
            short id = apiKeys.getField("id").getShort(key);
            boolean forwardable = apiKeys.getField("forwardable").getBoolean(key);
            String name = (String) apiKeys.getField("name").get(key);
            items.add("{\"id\": " + id + ", \"name\": " + q(name) + ", \"forwardable\": " + forwardable + "}");
        }
        out.append(String.join(", ", items)).append("], \"metadata_versions\": [");
        Class<?> mv = Class.forName("org.apache.kafka.server.common.MetadataVersion");
        items.clear();
        for (Object level : mv.getEnumConstants()) {
            items.add("{\"level\": " + call(level, "featureLevel")
                + ", \"name\": " + q(String.valueOf(call(level, "version")))
                + ", \"register_broker\": " + call(level, "registerBrokerRecordVersion")
                + ", \"partition\": " + call(level, "partitionRecordVersion")
                + ", \"partition_change\": " + call(level, "partitionChangeRecordVersion")
                + ", \"transactions\": " + call(level, "isMetadataTransactionSupported")
                + ", \"delegation_tokens\": " + call(level, "isDelegationTokenSupported")
                + ", \"metadata_changed\": " + call(level, "didMetadataChange")
                + ", \"production\": " + call(level, "isProduction") + "}");
        }
        out.append(String.join(", ", items)).append("], \"features\": [");
        Class<?> feature = Class.forName("org.apache.kafka.server.common.Feature");
        List<?> production = (List<?>) feature.getField("PRODUCTION_FEATURES").get(null);
        items.clear();
        for (Object f : production) {
            List<String> levels = new ArrayList<>();
            for (Object v : (Object[]) call(f, "featureVersions")) {
                List<String> deps = new ArrayList<>();
                for (Map.Entry<?, ?> d : ((Map<?, ?>) call(v, "dependencies")).entrySet()) {
                    deps.add(q(String.valueOf(d.getKey())) + ": " + d.getValue());
                }
                levels.add("{\"level\": " + call(v, "featureLevel")
                    + ", \"bootstrap_metadata_version\": " + q(String.valueOf(call(v, "bootstrapMetadataVersion")))
                    + ", \"dependencies\": {" + String.join(", ", deps) + "}}");
            }
            items.add("{\"name\": " + q(String.valueOf(call(f, "featureName")))
                + ", \"latest_production\": " + call(f, "latestProduction")
                + ", \"levels\": [" + String.join(", ", levels) + "]}");
        }
        out.append(String.join(", ", items)).append("]}");
        System.out.println(out);
    }
}
