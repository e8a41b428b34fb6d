// JitSpin: spins in spinJava (its JIT-compiled code) until killed; prints
// "ready" once the method has run hot for a second, so the JIT has
// compiled it before a test asks the JVM for its perf map.
public class JitSpin {
    static long spinJava(long n) {
        long x = 0;
        for (long i = 0; i < n; i++) {
            x += i * 7 ^ (x >>> 3);
        }
        return x;
    }

    public static void main(String[] args) {
        long sink = 0;
        long start = System.nanoTime();
        boolean told = false;
        while (true) {
            sink += spinJava(1_000_000);
            if (!told && System.nanoTime() - start > 1_000_000_000L) {
                System.out.println("ready " + (sink & 1));
                System.out.flush();
                told = true;
            }
        }
    }
}
