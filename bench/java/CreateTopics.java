// Kafka's own AdminClient creating `count` topics of `partitions` partitions (replication factor
// `rf`) through the broker at `bootstrap`, `batch` topics per createTopics call (all the calls
// at once: Kafka's controller refuses one operation of over 10,000 records, and 1,000 topics of
// 10 partitions are 11,000), then describing them from
// that broker until every partition has a leader. Run by bench.real_cluster_failover with the
// pinned Kafka jars on the class path (Java's single-file source launcher: no build step).
// Prints one line, "CreateTopics" and a JSON object: the AdminClient's answer and the leaders'
// arrival, in ms from the call.

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartitionInfo;

public class CreateTopics {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String prefix = args[1];
        int count = Integer.parseInt(args[2]);
        int partitions = Integer.parseInt(args[3]);
        short rf = Short.parseShort(args[4]);
        int batch = Integer.parseInt(args[5]);
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "120000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "300000");
        List<NewTopic> topics = new ArrayList<>();
        List<String> names = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            String name = String.format("%s%04d", prefix, i);
            names.add(name);
            topics.add(new NewTopic(name, partitions, rf));
        }
        try (Admin admin = Admin.create(props)) {
            admin.describeCluster().nodes().get(); // connected before the clock starts
            long beganEpochMs = System.currentTimeMillis(); // to read the brokers' logs against
            long began = System.nanoTime();
            List<KafkaFuture<Void>> calls = new ArrayList<>();
            for (int from = 0; from < count; from += batch) {
                calls.add(admin.createTopics(topics.subList(from, Math.min(count, from + batch))).all());
            }
            KafkaFuture.allOf(calls.toArray(new KafkaFuture[0])).get();
            long acknowledged = System.nanoTime();
            long polls = 0;
            while (true) {
                polls++;
                if (allLed(admin, names, partitions)) break;
                Thread.sleep(100);
            }
            long led = System.nanoTime();
            System.out.printf(
                "CreateTopics {\"topics\": %d, \"partitions_each\": %d, \"topics_per_call\": %d,"
                    + " \"acknowledged_ms\": %.1f,"
                    + " \"every_partition_led_ms\": %.1f, \"describe_polls\": %d,"
                    + " \"began_epoch_ms\": %d}%n",
                count, partitions, batch, (acknowledged - began) / 1e6, (led - began) / 1e6, polls,
                beganEpochMs);
        }
    }

    static boolean allLed(Admin admin, List<String> names, int partitions) {
        try {
            Map<String, TopicDescription> described = admin.describeTopics(names).allTopicNames().get();
            for (TopicDescription topic : described.values()) {
                if (topic.partitions().size() != partitions) return false;
                for (TopicPartitionInfo p : topic.partitions()) {
                    if (p.leader() == null || p.leader().isEmpty()) return false;
                }
            }
            return described.size() == names.size();
        } catch (Exception notYet) { // UnknownTopicOrPartition until the broker has them all
            return false;
        }
    }
}
