"""A real local Neo4j Community server, assembled from Maven Central and run in the background.

Only its owner can open it: the first start generates a random password, kept in
``<GRAPHMEM_HOME>/neo4j-password`` (mode 0600, the home folder 0700; graphmem reads it when
GRAPHMEM_NEO4J_PASSWORD is not set), and Neo4j's HTTP API answers cross-origin requests only for
its own Browser origin, so a web page on another origin can neither read nor write the store
(docs/security.md, "Local store").

Layout under ``<GRAPHMEM_HOME>/neo4j`` (git-ignored, default ``.graphmem/neo4j``)::

    pom.xml      the server artifacts (neo4j, neo4j-server, neo4j-browser) at pinned versions
    lib/         their resolved jars (``mvn dependency:copy-dependencies``)
    conf/        neo4j.conf: loopback only, small heap and page cache, usage reporting off
    data/ logs/  the database and its logs (``logs/console.log`` holds the JVM output)
    run/neo4j.pid  the process id of the server this module started

The JVM is launched like the official launcher does (``CommunityEntryPoint`` with the
``--add-opens`` flags Neo4j needs on Java 17+).
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import string
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from graphmem.core.config import Settings, password_file
from graphmem.core.errors import LocalServerError
from graphmem.core.private_files import write_private
from graphmem.core.process import owner_gone, owner_token

# Flags of the official launcher (neo4j.conf ``server.jvm.additional`` defaults of 5.26).
JVM_FLAGS = [
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+UnlockExperimentalVMOptions",
    "-XX:+TrustFinalNonStaticFields",
    "-XX:+DisableExplicitGC",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Djdk.tls.ephemeralDHKeySize=2048",
    "-Djdk.tls.rejectClientInitiatedRenegotiation=true",
    "-XX:FlightRecorderOptions=stackdepth=256",
    "-XX:+UnlockDiagnosticVMOptions",
    "-XX:+DebugNonSafepoints",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "-Dlog4j2.disable.jmx=true",
    "-Dfile.encoding=UTF-8",
]
ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"
ADMIN_TOOL = "org.neo4j.cli.AdminTool"
#: Folder (under ``<neo4j home>/data``) where the first-load importer keeps the database it
#: replaces until the import is done (``import-aside-<pid>-<random>``), with :data:`ASIDE_STATE` in it.
ASIDE_PREFIX = "import-aside-"
#: The aside folder's note (JSON): ``owner`` (the importing process, graphmem.core.process),
#: ``existed`` (which of the database's store and transaction folders existed before) and
#: ``stopped_server`` (the import stopped a running server).
ASIDE_STATE = "state.json"

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.graphmem</groupId>
  <artifactId>neo4j-local</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.neo4j</groupId><artifactId>neo4j</artifactId><version>{version}</version></dependency>
    <dependency><groupId>org.neo4j.app</groupId><artifactId>neo4j-server</artifactId><version>{version}</version></dependency>
    <dependency><groupId>org.neo4j.client</groupId><artifactId>neo4j-browser</artifactId><version>{browser}</version></dependency>
  </dependencies>
</project>
"""


def new_password() -> str:
    """A random password for a local store: 32 letters and digits (190 bits). No ``-``: the
    password is an argument of ``neo4j-admin dbms set-initial-password``, which took one that
    began with ``-`` for an option and refused to start the store (1 first start in 32 with
    URL-safe tokens)."""
    return "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32))


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@dataclass(frozen=True)
class ServerStatus:
    """What ``graphmem neo4j status`` reports."""

    running: bool
    pid: int | None
    bolt_uri: str
    browser_url: str
    home: Path
    version: str


class LocalServer:
    """Assemble, start, stop and inspect the local Neo4j server.

    Args:
        settings: graphmem settings (home folder, versions, memory, ports, password).
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.home = settings.neo4j_home.resolve()
        self.password_path = password_file(settings.home).resolve()
        self.lib = self.home / "lib"
        self.conf = self.home / "conf"
        self.pid_file = self.home / "run" / "neo4j.pid"
        self.console_log = self.home / "logs" / "console.log"
        self._proc: subprocess.Popen[bytes] | None = None

    # ---------------------------------------------------------------- assembly
    def java(self) -> str:
        """Path of the ``java`` binary (GRAPHMEM_JAVA_HOME, JAVA_HOME, then PATH)."""
        for home in (self.settings.java_home, os.environ.get("JAVA_HOME")):
            if home and (Path(home) / "bin" / "java").exists():
                return str(Path(home) / "bin" / "java")
        found = shutil.which("java")
        if not found:
            raise LocalServerError("no java found: install Java 17+ or set JAVA_HOME")
        return found

    def assembled(self) -> bool:
        stamp = self.lib / ".assembled"
        return stamp.exists() and stamp.read_text().strip() == self._version_key()

    def _version_key(self) -> str:
        return f"{self.settings.neo4j_version}+browser-{self.settings.neo4j_browser_version}"

    def assemble(self) -> None:
        """Resolve the server jars from Maven Central into ``lib/`` (once per version)."""
        if self.assembled():
            return
        mvn = shutil.which("mvn")
        if not mvn:
            raise LocalServerError("Maven (mvn) is needed once to fetch the Neo4j jars")
        self.home.mkdir(parents=True, exist_ok=True)
        pom = self.home / "pom.xml"
        pom.write_text(
            POM.format(
                version=self.settings.neo4j_version, browser=self.settings.neo4j_browser_version
            )
        )
        if self.lib.exists():
            shutil.rmtree(self.lib)
        cmd = [
            mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
            f"-DoutputDirectory={self.lib}", "-DincludeScope=runtime",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise LocalServerError(
                "Maven could not resolve Neo4j "
                f"{self.settings.neo4j_version}:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
            )
        (self.lib / ".assembled").write_text(self._version_key())

    def write_config(self) -> None:
        """Write ``conf/neo4j.conf`` (loopback only, small memory, no usage reports)."""
        s = self.settings
        self.conf.mkdir(parents=True, exist_ok=True)
        for sub in ("data", "logs", "run", "plugins", "import"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        lines = [
            "# written by graphmem; edits are overwritten on `graphmem neo4j start`",
            "server.default_listen_address=127.0.0.1",
            "server.default_advertised_address=127.0.0.1",
            f"server.bolt.listen_address=127.0.0.1:{s.neo4j_bolt_port}",
            f"server.bolt.advertised_address=127.0.0.1:{s.neo4j_bolt_port}",
            f"server.http.listen_address=127.0.0.1:{s.neo4j_http_port}",
            f"server.http.advertised_address=127.0.0.1:{s.neo4j_http_port}",
            "server.https.enabled=false",
            f"server.memory.heap.initial_size={s.neo4j_heap_mb}m",
            f"server.memory.heap.max_size={s.neo4j_heap_mb}m",
            f"server.memory.pagecache.size={s.neo4j_pagecache_mb}m",
            "dbms.usage_report.enabled=false",
            "dbms.security.auth_enabled=true",
            # CORS: Neo4j answers "Access-Control-Allow-Origin: *" by default, so any web page
            # the user opens could POST Cypher to /db/neo4j/tx/commit; only the server's own
            # Browser origin is allowed (the Browser served here is same-origin anyway)
            f"dbms.security.http_access_control_allow_origin=http://127.0.0.1:{s.neo4j_http_port}",
            "db.tx_log.rotation.retention_policy=2 files",
            f"server.directories.data={self.home / 'data'}",
            f"server.directories.logs={self.home / 'logs'}",
            f"server.directories.run={self.home / 'run'}",
            f"server.directories.plugins={self.home / 'plugins'}",
            f"server.directories.import={self.home / 'import'}",
            f"server.directories.lib={self.lib}",
        ]
        (self.conf / "neo4j.conf").write_text("\n".join(lines) + "\n")

    def _set_initial_password(self) -> None:
        """Give a new store its password (a store with a system database has one already).

        GRAPHMEM_NEO4J_PASSWORD when set; else the password file's, generated here
        (:func:`new_password`, written 0600 by :func:`write_private`) when there is none. The
        settings take the new password, so the rest of this process connects with it.
        """
        self.settings.home.mkdir(parents=True, exist_ok=True)
        self.settings.home.chmod(0o700)  # the home holds the password file and the database
        if (self.home / "data" / "dbms").exists():
            return  # the system database exists: the password was set on first start
        if self.settings.password_source in ("none", "legacy"):
            password = new_password()
            write_private(self.password_path, password)
            self.settings.use_password(password, "file")
        env = dict(os.environ, NEO4J_HOME=str(self.home), NEO4J_CONF=str(self.conf))
        proc = subprocess.run(
            [
                self.java(), "-cp", f"{self.lib}/*", ADMIN_TOOL, "dbms", "set-initial-password",
                self.settings.neo4j_password.get_secret_value(),
            ],
            capture_output=True, text=True, env=env,
        )
        if proc.returncode != 0:
            raise LocalServerError(f"set-initial-password failed: {proc.stdout}{proc.stderr}")

    def rotate_password(self) -> None:
        """Replace the running store's password with a new random one and keep it in the
        password file: the upgrade of a store made with :data:`~graphmem.config.LEGACY_PASSWORD`,
        or a rotation. The new password is written (0600) beside the file before Neo4j takes
        it, so an interrupted rotation leaves it in ``neo4j-password.new``.

        Raises:
            LocalServerError: GRAPHMEM_NEO4J_PASSWORD is set (that password is yours to change),
                the server is not running, or Neo4j refused the change.
        """
        from neo4j import GraphDatabase

        s = self.settings
        if s.password_source == "given":
            raise LocalServerError(
                "GRAPHMEM_NEO4J_PASSWORD is set, so graphmem does not manage this password: change it "
                "with ALTER CURRENT USER in Neo4j, or unset the variable to use the password file"
            )
        if self.pid() is None:
            raise LocalServerError("the local server is not running (graphmem neo4j start)")
        old = s.neo4j_password.get_secret_value()
        new = new_password()
        pending = self.password_path.with_name(self.password_path.name + ".new")
        write_private(pending, new)
        try:
            with GraphDatabase.driver(f"bolt://127.0.0.1:{s.neo4j_bolt_port}", auth=(s.neo4j_user, old)) as d:
                d.execute_query("ALTER CURRENT USER SET PASSWORD FROM $old TO $new",
                                old=old, new=new, database_="system")
        except Exception as e:  # noqa: BLE001 - any refusal: the old password stays
            pending.unlink(missing_ok=True)
            raise LocalServerError(f"Neo4j refused the new password: {type(e).__name__}") from e
        os.replace(pending, self.password_path)
        s.use_password(new, "file")

    # ---------------------------------------------------------------- lifecycle
    def pid(self) -> int | None:
        """PID of the server this home started, if that process is alive."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            return None
        # Only our own server: same entry point and same home folder.
        if ENTRY_POINT in cmdline and str(self.home) in cmdline:
            return pid
        return None

    # ---------------------------------------------------------------- an import that died
    def database_dirs(self) -> list[Path]:
        """The database's store and transaction-log folders (what the importer replaces)."""
        db = self.settings.neo4j_database
        data = self.home / "data"
        return [data / "databases" / db, data / "transactions" / db]

    def begin_import(self, *, stopped_server: bool) -> Path:
        """Move the database aside for the first-load importer (a rename, no copy) and note
        who did it (:data:`ASIDE_STATE`), so that a process killed during the import leaves a
        state :meth:`undo_dead_import` puts back. Returns the aside folder."""
        import json

        data = self.home / "data"
        data.mkdir(parents=True, exist_ok=True)
        # a new folder of its own: one left by a dead import of the same pid (after a reboot)
        # may hold the only copy of the database, and is never removed here
        aside = Path(tempfile.mkdtemp(prefix=f"{ASIDE_PREFIX}{os.getpid()}-", dir=data))
        live = self.database_dirs()
        note = {"owner": owner_token(), "existed": [i for i, d in enumerate(live) if d.exists()],
                "stopped_server": stopped_server}
        (aside / ASIDE_STATE).write_text(json.dumps(note), encoding="utf-8")
        for i, d in enumerate(live):
            if d.exists():
                d.rename(aside / str(i))
        return aside

    def finish_import(self, aside: Path) -> None:
        """Forget the database an import replaced, once the import succeeded: the note first
        (:data:`ASIDE_STATE`), so a process killed while the folder is removed leaves nothing that
        :meth:`undo_dead_import` would put back over the new database."""
        (aside / ASIDE_STATE).unlink(missing_ok=True)
        shutil.rmtree(aside, ignore_errors=True)

    def put_back(self, aside: Path, existed: list[int]) -> None:
        """Undo :meth:`begin_import`: remove what the importer wrote, move the database back."""
        for i, d in enumerate(self.database_dirs()):
            kept = aside / str(i)
            if kept.exists() or i not in existed:  # the importer's (partial) folder goes
                if d.exists():
                    shutil.rmtree(d)
            if kept.exists():
                d.parent.mkdir(parents=True, exist_ok=True)
                kept.rename(d)
        shutil.rmtree(aside, ignore_errors=True)

    def undo_dead_import(self) -> list[str]:
        """Put back the database of an import whose process is gone (killed with SIGKILL, or
        the machine stopped, while neo4j-admin wrote the new one): the half-imported database
        is removed and the one it was replacing comes back, so the server never starts on a
        half-written store and a plain re-run of the import starts from the state before it.
        An import whose process runs (or whose owner cannot be judged, e.g. another machine)
        is left alone. Called by :meth:`start` and before every import.

        Returns:
            One line per import undone (empty when there was none); a server the dead import
            had stopped is started again by the caller that asks (``stopped_server`` lines
            end with "(it had stopped the server)").
        """
        import json

        undone = []
        for aside in sorted((self.home / "data").glob(f"{ASIDE_PREFIX}*")):
            try:
                note = json.loads((aside / ASIDE_STATE).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # not ours to judge (an import of an older version, or still starting)
            if not owner_gone(note.get("owner"), local=True):  # an earlier boot counts as gone
                continue
            self.put_back(aside, list(note.get("existed") or []))
            undone.append(f"put back the database an interrupted import ({aside.name}) was replacing"
                          + (" (it had stopped the server)" if note.get("stopped_server") else ""))
        return undone

    def start(self, wait: bool = True) -> ServerStatus:
        """Start the server in the background; a second call is harmless. The database of an
        import that was killed half-way is put back first (:meth:`undo_dead_import`).

        Raises:
            LocalServerError: assembly failed, the port is taken by another process, or the
                server did not answer ``RETURN 1`` within ``neo4j_start_timeout_s``.
        """
        if self.pid() is None:
            self.undo_dead_import()
            for port in (self.settings.neo4j_bolt_port, self.settings.neo4j_http_port):
                if _port_in_use(port):
                    raise LocalServerError(
                        f"port {port} on 127.0.0.1 is already in use by another process (another "
                        "Neo4j?). Use that server through GRAPHMEM_NEO4J_URI, or pick free ports "
                        "with GRAPHMEM_NEO4J_BOLT_PORT / GRAPHMEM_NEO4J_HTTP_PORT."
                    )
            self.assemble()
            self.write_config()
            self._set_initial_password()
            s = self.settings
            cmd = [
                self.java(), f"-Xms{s.neo4j_heap_mb}m", f"-Xmx{s.neo4j_heap_mb}m", *JVM_FLAGS,
                "-cp", f"{self.lib}/*", ENTRY_POINT,
                f"--home-dir={self.home}", f"--config-dir={self.conf}",
            ]
            self.console_log.parent.mkdir(parents=True, exist_ok=True)
            with open(self.console_log, "ab") as log:
                proc = subprocess.Popen(
                    cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    cwd=self.home, start_new_session=True,
                )
            self._proc = proc
            self.pid_file.parent.mkdir(parents=True, exist_ok=True)
            self.pid_file.write_text(str(proc.pid))
        if wait:
            try:
                self.wait_ready()
            except LocalServerError:
                self.stop(timeout_s=20)  # never leave a half-started server behind
                raise
        return self.status()

    def wait_ready(self) -> None:
        """Block until ``RETURN 1`` succeeds over Bolt."""
        from neo4j import GraphDatabase

        s = self.settings
        deadline = time.monotonic() + s.neo4j_start_timeout_s
        last: Exception | None = None
        uri = f"bolt://127.0.0.1:{s.neo4j_bolt_port}"
        while time.monotonic() < deadline:
            exited = self._proc.poll() is not None if self._proc else self.pid() is None
            if exited:
                raise LocalServerError(
                    f"Neo4j exited during start; see {self.console_log}:\n{self._tail()}"
                )
            try:
                with GraphDatabase.driver(
                    uri, auth=(s.neo4j_user, s.neo4j_password.get_secret_value())
                ) as d, d.session() as session:
                    session.run("RETURN 1").consume()  # no driver-level retry: we poll here
                return
            except Exception as e:  # noqa: BLE001 - any failure means "not ready yet"
                last = e
                time.sleep(1.0)
        raise LocalServerError(f"Neo4j did not become ready in time ({last}):\n{self._tail()}")

    def stop(self, timeout_s: float = 60.0) -> bool:
        """Stop the server this home started (never any other process). Returns True if one ran."""
        pid = self.pid()
        if pid is None and self._proc is not None and self._proc.poll() is None:
            pid = self._proc.pid  # our own child, possibly before its command line is readable
        if pid is None:
            return False
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self._alive(pid):
            time.sleep(0.5)
        if self._alive(pid):
            os.kill(pid, signal.SIGKILL)
        if self._proc is not None:
            self._proc.wait(timeout=10)  # reap our own child
            self._proc = None
        self.pid_file.unlink(missing_ok=True)
        return True

    def _alive(self, pid: int) -> bool:
        if self._proc is not None and self._proc.pid == pid:
            return self._proc.poll() is None
        return self.pid() == pid

    def status(self) -> ServerStatus:
        s = self.settings
        return ServerStatus(
            running=self.pid() is not None,
            pid=self.pid(),
            bolt_uri=f"bolt://127.0.0.1:{s.neo4j_bolt_port}",
            browser_url=f"http://127.0.0.1:{s.neo4j_http_port}/browser/",
            home=self.home,
            version=s.neo4j_version,
        )

    def _tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.console_log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""
