// clients.js - Node.js mysql2 through the 6450 proxy, for
// tests/integration/node_clients.sh:
//
//   node clients.js PORT WRITER_PORT CA_FILE CSV_FILE
//   node clients.js PORT WRITER_PORT CA_FILE sha2
//
// (sha2: the proxy announces caching_sha2_password; logins without TLS (the
// RSA exchange, then the cache) and with it, each checked by a query.)
//
// A pool, query and prepared execute, transactions (committed and rolled
// back), TLS with the server's certificate verified, KILL QUERY, LOAD DATA
// LOCAL INFILE with infileStreamFactory. Writes go to t.node, whose rows the
// shell script counts on the writer. Prints "ok - ..." / "not ok - ..." and
// "measured: ..." lines; exits 1 when a check failed.
'use strict';
const fs = require('fs');
const mysql = require('mysql2/promise');

const [port, writerPort, caFile, csvFile] = process.argv.slice(2);
const base = { host: '127.0.0.1', port: Number(port), user: 'app', password: 'app',
  connectTimeout: 10000 };
let failed = false;

function check(ok, what) {
  console.log(`${ok ? 'ok' : 'not ok'} - ${what}`);
  if (!ok) failed = true;
}

async function errno(p) {
  try {
    await p;
    return 0;
  } catch (e) {
    return e.errno || e.code || String(e);
  }
}

async function sha2() {
  for (const [what, opts] of [
    ['without TLS (the RSA exchange)', {}],
    ['without TLS again', {}],
    ['over TLS', { ssl: { ca: fs.readFileSync(caFile), rejectUnauthorized: true } }],
  ]) {
    const c = await mysql.createConnection({ ...base, ...opts });
    const [[u]] = await c.query('SELECT CURRENT_USER() AS u, CONNECTION_ID() AS id');
    check(u.u === 'app@%' && u.id === c.threadId,
      `caching_sha2_password ${what}: logged in, CURRENT_USER() ${u.u}`);
    await c.end();
  }
  const wrong = await errno(mysql.createConnection({ ...base, password: 'wrong' }));
  check(wrong === 1045, `a wrong password: ${wrong}`);
  console.log('node_clients: done');
}

async function main() {
  if (csvFile === 'sha2') return sha2();
  // --- pool, query, prepared execute ---------------------------------------------
  const pool = mysql.createPool({ ...base, connectionLimit: 4 });
  const ports = await Promise.all(Array.from({ length: 20 }, () =>
    pool.query('SELECT @@port AS p').then(([rows]) => rows[0].p)));
  console.log(`measured: 20 pooled reads served by ports ${[...new Set(ports)].sort().join(' ')}`);
  check(ports.length === 20 && ports.every((p) => p !== Number(writerPort)),
    'pool: 20 reads answered, none by the writer');
  const [[sum]] = await pool.execute('SELECT ? + ? AS s', [40, 2]);
  check(Number(sum.s) === 42, `prepared execute with parameters: ${sum.s}`);
  const [res] = await pool.execute('INSERT INTO t.node (id, v) VALUES (?, ?)', [1, 'execute']);
  check(res.affectedRows === 1, 'prepared INSERT: 1 row');
  const [res2] = await pool.query('INSERT INTO t.node (id, v) VALUES (2, ?)', ['query']);
  check(res2.affectedRows === 1, 'INSERT by query: 1 row');
  const [[got]] = await pool.execute('SELECT v FROM t.node WHERE id = ?', [1]);
  check(got && got.v === 'execute', 'the prepared INSERT reads back');

  // --- transactions ------------------------------------------------------------------
  const c = await pool.getConnection();
  await c.beginTransaction();
  await c.query("INSERT INTO t.node VALUES (3, 'rolled back')");
  const [[inTrx]] = await c.query('SELECT @@port AS p');
  check(inTrx.p === Number(writerPort), `a read inside the transaction runs on the writer (${inTrx.p})`);
  await c.rollback();
  const [gone] = await c.query('SELECT * FROM t.node WHERE id = 3');
  check(gone.length === 0, 'rollback: the row is not there');
  await c.beginTransaction();
  await c.execute("INSERT INTO t.node VALUES (4, 'committed')");
  await c.commit();
  c.release();
  const [[kept]] = await pool.query('SELECT v FROM t.node WHERE id = 4');
  check(kept && kept.v === 'committed', 'commit: the row is there');

  // --- changeUser (COM_CHANGE_USER) ----------------------------------------------------
  const cu = await mysql.createConnection(base);
  const other = await mysql.createConnection(base);
  await cu.query('SET @mark = 1');
  await cu.changeUser({ user: 'app_admin', password: 'app_admin' });
  const [[who]] = await cu.query('SELECT CURRENT_USER() AS u, @mark AS m, CONNECTION_ID() AS id');
  check(who.u === 'app_admin@%' && who.m === null && who.id === cu.threadId,
    `changeUser to app_admin: CURRENT_USER() ${who.u}, the session reset, its id kept`);
  check(await errno(cu.query(`KILL QUERY ${other.threadId}`)) === 1095,
    "now app_admin: KILL of app's session refused (1095)");
  check(await errno(other.query(`KILL QUERY ${cu.threadId}`)) === 1095,
    "app: KILL of the session that became app_admin's refused (1095)");
  await cu.query("INSERT INTO t.node VALUES (6, 'as app_admin')");
  const bad = await errno(cu.changeUser({ user: 'app', password: 'wrong' }));
  check(bad === 1045, `changeUser with a wrong password: ${bad}`);
  await cu.end().catch(() => {});
  await other.end();

  // --- TLS, the server's certificate verified ------------------------------------------------
  const tls = await mysql.createConnection({ ...base,
    ssl: { ca: fs.readFileSync(caFile), rejectUnauthorized: true } });
  const [[one]] = await tls.query('SELECT 1 AS x');
  const stream = tls.connection.stream;
  const proto = stream && stream.getProtocol ? stream.getProtocol() : 'none';
  console.log(`measured: TLS protocol ${proto}, authorized ${stream.authorized}`);
  check(one.x === 1 && proto.startsWith('TLS') && stream.authorized === true,
    'TLS with rejectUnauthorized and the sandbox CA: a query answered');
  await tls.execute('INSERT INTO t.node VALUES (5, ?)', ['over tls']);
  await tls.end();
  const noCa = await errno(mysql.createConnection({ ...base,
    ssl: { rejectUnauthorized: true } }));
  check(noCa !== 0, `TLS without the CA is refused by the client (${noCa})`);

  // --- KILL QUERY ----------------------------------------------------------------------------
  const a = await mysql.createConnection(base);
  const b = await mysql.createConnection(base);
  const [[idRow]] = await a.query('SELECT CONNECTION_ID() AS id');
  check(idRow.id === a.threadId, `CONNECTION_ID() = the handshake's id (${idRow.id})`);
  const t0 = Date.now();
  const sleeping = errno(a.query('SELECT SLEEP(30)'));
  await new Promise((r) => setTimeout(r, 1500));
  await b.query(`KILL QUERY ${a.threadId}`);
  const code = await sleeping;
  console.log(`measured: KILL QUERY: the SLEEP(30) ended after ${Date.now() - t0} ms`);
  check(code === 1317, `A's SLEEP(30) gets 1317 after KILL QUERY (${code})`);
  const [[after]] = await a.query('SELECT 1 AS x');
  check(after.x === 1, "A's session goes on");
  check(await errno(b.query('KILL QUERY 3999999999')) === 1094, 'unknown id: 1094');
  const [[psId]] = await a.execute('SELECT CONNECTION_ID() AS id, ? AS x', [7]);
  check(psId.id === a.threadId, `a prepared CONNECTION_ID() is the handshake's id too (${psId.id})`);
  check(await errno(b.execute('KILL QUERY ?', [a.threadId])) === 1295,
    'a prepared KILL: 1295 (not supported in the prepared statement protocol)');
  await a.end();
  await b.end();

  // --- LOAD DATA LOCAL INFILE -------------------------------------------------------------------
  const l = await mysql.createConnection({ ...base, flags: ['+LOCAL_FILES'] });
  const [ld] = await l.query({
    sql: "LOAD DATA LOCAL INFILE 'node.csv' INTO TABLE t.node FIELDS TERMINATED BY ','",
    infileStreamFactory: () => fs.createReadStream(csvFile),
  });
  check(ld.affectedRows === 1000, `LOAD DATA LOCAL INFILE (infileStreamFactory): ${ld.affectedRows} rows`);
  await l.end();
  await pool.end();
  console.log('node_clients: done');
}

main().then(() => process.exit(failed ? 1 : 0), (e) => {
  console.log(`not ok - ${e.stack || e}`);
  process.exit(1);
});
