// A client harness for `idemcheck client` in Java 11+ (docs/clients.md):
//
//   idemcheck client --strict -- java examples/clients/Harness.java
//
// charge() stands for your SDK's call: one key per logical call, minted
// before the retry loop; the body serialised once; lost answers, 409, 429
// and 5xx retried with the same key and body, waiting Retry-After or a
// doubling back-off; 400 and 422 not retried. JDK only.
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public class Harness {
    static final String BASE = System.getenv("IDEMCHECK_BASE_URL");
    static final String TOKEN = System.getenv().getOrDefault("IDEMCHECK_TOKEN", "");
    static final Set<Integer> RETRYABLE = Set.of(409, 429, 500, 502, 503, 504);
    static final Pattern ID = Pattern.compile("\"id\"\\s*:\\s*\"([^\"]+)\"");
    static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    static String charge(long amount, String currency) throws Exception {
        String key = "\"" + UUID.randomUUID() + "\""; // an sf-string, once per call
        String body = "{\"amount\":" + amount + ",\"currency\":\"" + currency + "\"}";
        long wait = 100;
        for (int attempt = 1; ; attempt++) {
            HttpRequest req = HttpRequest.newBuilder(URI.create(BASE + "/v1/charges"))
                .timeout(Duration.ofSeconds(1))
                .header("Content-Type", "application/json")
                .header("Authorization", "Bearer " + TOKEN)
                .header("Idempotency-Key", key)
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build();
            long sleep = wait;
            try {
                HttpResponse<String> res = HTTP.send(req, HttpResponse.BodyHandlers.ofString());
                int s = res.statusCode();
                if (s >= 200 && s < 300) {
                    Matcher m = ID.matcher(res.body());
                    if (!m.find()) throw new IOException("no id in " + res.body());
                    return m.group(1);
                }
                if (!RETRYABLE.contains(s) || attempt == 5) throw new IllegalStateException("the API answered " + s);
                String ra = res.headers().firstValue("Retry-After").orElse("");
                if (ra.matches("\\d+")) sleep = Long.parseLong(ra) * 1000;
            } catch (IOException e) { // a lost answer or a timeout: retry with the same key and body
                if (attempt == 5) throw e;
            }
            Thread.sleep(sleep);
            wait *= 2;
        }
    }

    public static void main(String[] args) throws Exception {
        int calls = Integer.parseInt(System.getenv().getOrDefault("IDEMCHECK_CALLS", "1"));
        int parallel = Integer.parseInt(System.getenv().getOrDefault("IDEMCHECK_PARALLEL", "1"));
        AtomicBoolean failed = new AtomicBoolean();
        var threads = new ArrayList<Thread>();
        for (int w = 0; w < parallel; w++) {
            Thread t = new Thread(() -> {
                for (int i = 0; i < calls; i++) {
                    try {
                        String id = charge(1000, "usd");
                        synchronized (System.out) { System.out.println(id); }
                    } catch (Exception e) {
                        failed.set(true);
                        System.err.println("call failed: " + e);
                    }
                }
            });
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) t.join();
        System.exit(failed.get() ? 1 : 0);
    }
}
