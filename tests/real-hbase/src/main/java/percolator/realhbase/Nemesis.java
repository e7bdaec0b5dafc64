package percolator.realhbase;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.HRegionLocation;
import org.apache.hadoop.hbase.LocalHBaseCluster;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.TableNotFoundException;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.filter.FirstKeyOnlyFilter;
import org.apache.hadoop.hbase.master.HMaster;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.hadoop.hbase.util.JVMClusterUtil.RegionServerThread;

/**
 * Chaos for the cluster's tables while a workload runs: regions moved, split and merged, tables
 * flushed and major-compacted, and now and then a region server crashed (the one holding
 * {@code hbase:meta} one time in three) and replaced.
 *
 * <p>It acts only while the control file {@code nemesis.on} exists in the work directory
 * ({@code scripts/real-hbase nemesis start|stop}); the file's {@code NAME=VALUE} lines set
 * {@code interval} (seconds between actions), {@code crash-every} (seconds between crashes, 0
 * for none), {@code tables} (a name prefix: only those tables' regions are touched) and {@code
 * seed}. Every action is one line of {@code nemesis.log}; {@code
 * nemesis.counts} holds the count by kind and outcome, {@code nemesis.state} whether it is idle.
 * An action that fails is logged and counted, never fatal: a region busy splitting refuses a
 * merge, and that is part of the weather.
 */
final class Nemesis implements Runnable {
  private static final long ACTION_BOUND_SECS = 30;
  private static final long RECOVERY_BOUND_SECS = 120;
  /** Tables past this many regions are merged rather than split, so the run stays bounded. */
  private static final int MAX_REGIONS_PER_TABLE = 8;
  private static final int SPLIT_SAMPLE_ROWS = 200;

  private final LocalHBaseCluster cluster;
  private final Configuration conf;
  private final Path control;
  private final Path log;
  private final Path counts;
  private final Path state;
  private final Map<String, Integer> tally = new TreeMap<>();
  private Connection connection;
  private Admin admin;
  private Random random = new Random();
  private long intervalMillis = 3000;
  private long crashEveryMillis = 20000;
  private String tablePrefix = "";
  private long nextCrashAt;
  private int crashes;

  Nemesis(LocalHBaseCluster cluster, Configuration conf, Path work) {
    this.cluster = cluster;
    this.conf = new Configuration(conf);
    this.control = work.resolve("nemesis.on");
    this.log = work.resolve("nemesis.log");
    this.counts = work.resolve("nemesis.counts");
    this.state = work.resolve("nemesis.state");
  }

  /** Starts the nemesis's thread (a daemon: it never holds the JVM up). */
  static void start(LocalHBaseCluster cluster, Configuration conf, Path work) throws IOException {
    Nemesis nemesis = new Nemesis(cluster, conf, work);
    Files.deleteIfExists(nemesis.control);
    Files.deleteIfExists(nemesis.log);
    Files.deleteIfExists(nemesis.counts);
    nemesis.writeState("idle");
    Thread thread = new Thread(nemesis, "nemesis");
    thread.setDaemon(true);
    thread.start();
  }

  @Override
  public void run() {
    boolean active = false;
    while (true) {
      try {
        if (Files.exists(control)) {
          if (!active) {
            begin();
            active = true;
          }
          act();
          sleep(intervalMillis);
        } else {
          if (active) {
            note("stop", "-", "ok", 0);
            writeState("idle");
            active = false;
          }
          sleep(200);
        }
      } catch (InterruptedException e) {
        return;
      } catch (Exception e) {
        // Anything the actions did not catch themselves (the control file unreadable): keep
        // going, the next round reads it again.
        note("error", e.toString(), "failed", 0);
        try {
          sleep(1000);
        } catch (InterruptedException stop) {
          return;
        }
      }
    }
  }

  private void begin() throws IOException {
    long seed = System.nanoTime();
    tablePrefix = "";
    for (String line : Files.readAllLines(control, StandardCharsets.UTF_8)) {
      int eq = line.indexOf('=');
      if (eq < 0) {
        continue;
      }
      String name = line.substring(0, eq).trim();
      String value = line.substring(eq + 1).trim();
      switch (name) {
        case "interval":
          intervalMillis = (long) (Double.parseDouble(value) * 1000);
          break;
        case "crash-every":
          crashEveryMillis = (long) (Double.parseDouble(value) * 1000);
          break;
        case "tables":
          tablePrefix = value;
          break;
        case "seed":
          seed = Long.parseLong(value);
          break;
        default:
          break;
      }
    }
    random = new Random(seed);
    nextCrashAt = System.currentTimeMillis() + crashEveryMillis;
    writeState("running");
    note("start", "interval=" + intervalMillis + "ms crash-every=" + crashEveryMillis
        + "ms seed=" + seed + (tablePrefix.isEmpty() ? "" : " tables=" + tablePrefix + "*"),
        "ok", 0);
  }

  private void act() throws InterruptedException {
    if (crashEveryMillis > 0 && System.currentTimeMillis() >= nextCrashAt) {
      crash();
      nextCrashAt = System.currentTimeMillis() + crashEveryMillis;
      return;
    }
    List<HRegionLocation> regions;
    try {
      regions = userRegions();
    } catch (Exception e) {
      note("list", "the tables' regions", e, 0);
      dropConnection();
      return;
    }
    if (regions.isEmpty()) {
      return;
    }
    HRegionLocation region = regions.get(random.nextInt(regions.size()));
    TableName table = region.getRegion().getTable();
    int roll = random.nextInt(100);
    if (roll < 35) {
      move(region);
    } else if (roll < 75) {
      // Splits and merges alike, so that tables neither shrink to one region nor grow without
      // bound; a table at the bound is merged.
      List<TableName> mergeable = mergeable(regions);
      boolean wantSplit = roll < 55 && regionsOf(table, regions).size() < MAX_REGIONS_PER_TABLE;
      if (wantSplit || mergeable.isEmpty()) {
        splitSome(regions);
      } else {
        merge(mergeable.get(random.nextInt(mergeable.size())), regions);
      }
    } else if (roll < 90) {
      timed("flush", table.getNameAsString(), () -> admin().flush(table));
    } else {
      timed("major-compact", table.getNameAsString(), () -> admin().majorCompact(table));
    }
  }

  private static List<RegionInfo> regionsOf(TableName table, List<HRegionLocation> regions) {
    List<RegionInfo> own = new ArrayList<>();
    for (HRegionLocation r : regions) {
      if (r.getRegion().getTable().equals(table)) {
        own.add(r.getRegion());
      }
    }
    own.sort(Comparator.comparing(RegionInfo::getStartKey, Bytes::compareTo));
    return own;
  }

  /** The tables with two adjacent regions. */
  private static List<TableName> mergeable(List<HRegionLocation> regions) {
    List<TableName> out = new ArrayList<>();
    for (HRegionLocation r : regions) {
      TableName table = r.getRegion().getTable();
      if (!out.contains(table) && !adjacentPairs(regionsOf(table, regions)).isEmpty()) {
        out.add(table);
      }
    }
    return out;
  }

  private static List<Integer> adjacentPairs(List<RegionInfo> sorted) {
    List<Integer> starts = new ArrayList<>();
    for (int i = 0; i + 1 < sorted.size(); i++) {
      if (RegionInfo.areAdjacent(sorted.get(i), sorted.get(i + 1))) {
        starts.add(i);
      }
    }
    return starts;
  }

  private void move(HRegionLocation region) throws InterruptedException {
    List<ServerName> others = new ArrayList<>();
    for (RegionServerThread t : cluster.getLiveRegionServers()) {
      ServerName name = t.getRegionServer().getServerName();
      if (!name.equals(region.getServerName())) {
        others.add(name);
      }
    }
    if (others.isEmpty()) {
      return;
    }
    ServerName target = others.get(random.nextInt(others.size()));
    timed("move", region.getRegion().getRegionNameAsString() + " from "
        + region.getServerName().getServerName() + " to " + target.getServerName(),
        () -> admin().move(region.getRegion().getEncodedNameAsBytes(), target));
  }

  /**
   * Splits a region (of a table below the bound) at a row it holds: HBase's own choice of split
   * point needs store files, and a young region's rows are all in its memstore. Regions too
   * small to split are passed over for another.
   */
  private void splitSome(List<HRegionLocation> regions) throws InterruptedException {
    for (int attempt = 0; attempt < 5; attempt++) {
      RegionInfo info = regions.get(random.nextInt(regions.size())).getRegion();
      if (regionsOf(info.getTable(), regions).size() >= MAX_REGIONS_PER_TABLE) {
        continue;
      }
      byte[] at;
      try {
        at = middleRow(info);
      } catch (Exception e) {
        note("split", info.getRegionNameAsString(), e, 0);
        dropConnection();
        return;
      }
      if (at != null) {
        timed("split", info.getRegionNameAsString() + " at " + Bytes.toStringBinary(at), () ->
            admin().splitRegionAsync(info.getRegionName(), at)
                .get(ACTION_BOUND_SECS, TimeUnit.SECONDS));
        return;
      }
    }
  }

  /** The middle of the region's first rows, or null if it has too few to split. */
  private byte[] middleRow(RegionInfo region) throws IOException {
    Scan scan = new Scan().withStartRow(region.getStartKey()).withStopRow(region.getEndKey())
        .setFilter(new FirstKeyOnlyFilter()).setLimit(SPLIT_SAMPLE_ROWS).setCaching(SPLIT_SAMPLE_ROWS);
    List<byte[]> rows = new ArrayList<>();
    try (Table table = connection().getTable(region.getTable());
        ResultScanner scanner = table.getScanner(scan)) {
      for (Result r : scanner) {
        rows.add(r.getRow());
      }
    }
    if (rows.size() < 2) {
      return null;
    }
    byte[] middle = rows.get(rows.size() / 2);
    return Bytes.equals(middle, region.getStartKey()) ? null : middle;
  }

  private void merge(TableName table, List<HRegionLocation> regions) throws InterruptedException {
    List<RegionInfo> own = regionsOf(table, regions);
    List<Integer> starts = adjacentPairs(own);
    if (starts.isEmpty()) {
      return;
    }
    int i = starts.get(random.nextInt(starts.size()));
    RegionInfo a = own.get(i);
    RegionInfo b = own.get(i + 1);
    timed("merge", a.getRegionNameAsString() + " + " + b.getRegionNameAsString(), () ->
        admin().mergeRegionsAsync(
                new byte[][] {a.getEncodedNameAsBytes(), b.getEncodedNameAsBytes()}, false)
            .get(ACTION_BOUND_SECS, TimeUnit.SECONDS));
  }

  /**
   * Crashes one live region server and starts a replacement, then waits (bounded) until the
   * master has reassigned every region the victim held; the log line says how long that took.
   */
  private void crash() throws InterruptedException {
    crashes++;
    List<RegionServerThread> live = cluster.getLiveRegionServers();
    if (live.isEmpty()) {
      return;
    }
    ServerName metaHost = null;
    try {
      metaHost = metaHost();
    } catch (Exception e) {
      dropConnection();
    }
    RegionServerThread victim = null;
    boolean wantMeta = crashes % 3 == 0;
    List<RegionServerThread> candidates = new ArrayList<>();
    for (RegionServerThread t : live) {
      boolean holdsMeta = t.getRegionServer().getServerName().equals(metaHost);
      if (holdsMeta == wantMeta) {
        candidates.add(t);
      }
    }
    if (candidates.isEmpty()) {
      candidates = live;
    }
    victim = candidates.get(random.nextInt(candidates.size()));
    ServerName name = victim.getRegionServer().getServerName();
    boolean hard = crashes % 2 == 0;
    String kind = hard ? "crash-kill" : "crash-abort";
    String what = name.getServerName() + (name.equals(metaHost) ? " (hbase:meta)" : "");
    long at = System.nanoTime();
    try {
      if (hard && victim.getRegionServer() instanceof CrashableRegionServer) {
        ((CrashableRegionServer) victim.getRegionServer()).hardKill();
      } else {
        victim.getRegionServer().abort("nemesis", null);
      }
      RegionServerThread replacement =
          cluster.addRegionServer(new Configuration(conf), cluster.getRegionServers().size());
      replacement.start();
      replacement.waitForServerOnline();
      double noticed = awaitRecovery(name, at);
      note(kind, what + "; replaced by "
          + replacement.getRegionServer().getServerName().getServerName()
          + "; the master noticed after " + String.format("%.1f", noticed) + " s; regions back",
          "ok", at);
    } catch (Exception e) {
      note(kind, what, e, at);
    }
  }

  /** Seconds until the master saw VICTIM dead; returns once its regions are reassigned. */
  private double awaitRecovery(ServerName victim, long since) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(RECOVERY_BOUND_SECS);
    double noticed = -1;
    while (System.nanoTime() < deadline) {
      HMaster master = cluster.getActiveMaster();
      if (master != null && master.isInitialized()) {
        boolean gone = !master.getServerManager().isServerOnline(victim);
        if (gone && noticed < 0) {
          noticed = (System.nanoTime() - since) / 1e9;
        }
        if (gone && !master.getServerManager().areDeadServersInProgress()
            && !master.getAssignmentManager().hasRegionsInTransition()) {
          return noticed;
        }
      }
      Thread.sleep(100);
    }
    throw new IllegalStateException("regions not back within " + RECOVERY_BOUND_SECS + " s");
  }

  private interface Action {
    void run() throws Exception;
  }

  private void timed(String kind, String what, Action action) throws InterruptedException {
    long at = System.nanoTime();
    try {
      action.run();
      note(kind, what, "ok", at);
    } catch (InterruptedException e) {
      throw e;
    } catch (Exception e) {
      note(kind, what, e, at);
      dropConnection();
    }
  }

  private List<HRegionLocation> userRegions() throws IOException {
    List<HRegionLocation> all = new ArrayList<>();
    for (TableName table : admin().listTableNames()) {
      if (table.isSystemTable() || !table.getNameAsString().startsWith(tablePrefix)
          || !admin().isTableEnabled(table)) {
        continue;
      }
      try (RegionLocator locator = connection().getRegionLocator(table)) {
        for (HRegionLocation location : locator.getAllRegionLocations()) {
          if (location != null && location.getServerName() != null
              && !location.getRegion().isSplitParent() && !location.getRegion().isOffline()) {
            all.add(location);
          }
        }
      } catch (TableNotFoundException dropped) {
        // A test deleted it since the listing.
      }
    }
    return all;
  }

  private ServerName metaHost() throws IOException {
    try (RegionLocator locator = connection().getRegionLocator(TableName.META_TABLE_NAME)) {
      return locator.getRegionLocation(HConstants.EMPTY_START_ROW, true).getServerName();
    }
  }

  private Connection connection() throws IOException {
    if (connection == null || connection.isClosed()) {
      connection = ConnectionFactory.createConnection(conf);
    }
    return connection;
  }

  private Admin admin() throws IOException {
    if (admin == null) {
      admin = connection().getAdmin();
    }
    return admin;
  }

  /** After a failure the cached locations may point at a dead server: start afresh. */
  private void dropConnection() {
    if (connection != null) {
      try {
        if (admin != null) {
          admin.close();
        }
        connection.close();
      } catch (IOException ignored) {
        // Closing a connection to a cluster in trouble may fail; a new one is made next time.
      }
      connection = null;
      admin = null;
    }
  }

  private void note(String kind, String what, Exception failure, long since) {
    String message = String.valueOf(failure.getMessage()).replace('\n', ' ');
    if (message.length() > 300) {
      message = message.substring(0, 300) + "...";
    }
    note(kind, what, "failed: " + failure.getClass().getSimpleName() + ": " + message, since);
  }

  private synchronized void note(String kind, String what, String result, long since) {
    String took = since == 0 ? "" : String.format(" (%.1f s)", (System.nanoTime() - since) / 1e9);
    String line = Instant.now() + " " + kind + " " + what + " " + result + took + "\n";
    if (!kind.equals("start") && !kind.equals("stop")) {
      tally.merge(kind + (result.equals("ok") ? "" : " failed"), 1, Integer::sum);
    }
    StringBuilder summary = new StringBuilder();
    tally.forEach((k, v) -> summary.append(k).append(' ').append(v).append('\n'));
    try {
      Files.write(log, line.getBytes(StandardCharsets.UTF_8),
          StandardOpenOption.CREATE, StandardOpenOption.APPEND);
      Path partial = counts.resolveSibling("nemesis.counts.tmp");
      Files.write(partial, summary.toString().getBytes(StandardCharsets.UTF_8));
      Files.move(partial, counts, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      System.err.print("nemesis: " + line);
    }
  }

  private void writeState(String value) {
    try {
      Files.write(state, Collections.singletonList(value), StandardCharsets.UTF_8);
    } catch (IOException e) {
      System.err.println("nemesis: cannot write " + state + ": " + e);
    }
  }

  private static void sleep(long millis) throws InterruptedException {
    Thread.sleep(millis);
  }
}
