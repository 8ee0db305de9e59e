// Analytics (docs/api/dashboard.md §2.8) and System (§2.9).
import { useState } from 'preact/hooks';
import { api } from './api.js';
import {
  useData, get, Panel, Table, fmtNum, fmtTime, fmtBytes, fmtDur, Gate, Confirm, windowRange, WindowPicker, setQuery,
  SearchBox, State, useCan,
} from './lib.jsx';
import { LineChart } from './charts.jsx';
import { throughputSeries } from './overview.jsx';

const ms = (ts) => +new Date(ts);

function perQueue(data, field, { other = true } = {}) {
  const out = ((data && data.queues) || []).map((s) => ({ name: s.queue + (s.workerId ? ' @ ' + s.workerId : ''), points: s.points.map((p) => [ms(p.timestamp), p[field] || 0]) }));
  if (other && data && data.other && data.other.length) out.push({ name: 'other', points: data.other.map((p) => [ms(p.timestamp), p[field] || 0]) });
  return out;
}

function Chart({ st, title, unit, series, gauge }) {
  const d = st.data;
  return (
    <Panel title={title} st={st} id={'c-' + title.replace(/\W+/g, '-').toLowerCase()}>
      {d && (
        <>
          <p class="muted">
            Bucket: {d.bucketMinutes} min{d.omittedQueues ? ` · ${d.omittedQueues} more queues in “other”` : ''}
          </p>
          <LineChart title={title} unit={unit} series={series(d)} from={d.timeRange.from} to={d.timeRange.to} bucketMs={d.bucketMinutes * 60000} gauge={gauge} />
        </>
      )}
    </Panel>
  );
}

export function Analytics({ q }) {
  const range = windowRange(q);
  const f = { ...range, queue: q.queue };
  const key = [q.window, q.from, q.to, q.queue, q.ns, q.task];
  const status = useData(get('api/v1/status', { ...range, queue: q.queue, namespace: q.ns, task: q.task }), ['a-status', ...key]);
  const ops = useData(get('api/v1/analytics/queue-ops', f), ['a-ops', ...key]);
  const wm = useData(get('api/v1/analytics/worker-metrics', range), ['a-wm', ...key]);
  const lag = useData(get('api/v1/analytics/queue-lag', f), ['a-lag', ...key]);
  const written = useData(get('api/v1/status/analytics', { ...range, queue: q.queue, namespace: q.ns, task: q.task, interval: 'minute' }), ['a-w', ...key]);
  const parked = useData(get('api/v1/analytics/queue-parked-replicas', f), ['a-p', ...key]);
  const ret = useData(get('api/v1/analytics/retention', f), ['a-r', ...key]);
  const lat = (d) => {
    const out = [];
    for (const w of d.workers || []) {
      for (const op of ['push', 'pop', 'ack']) {
        for (const stat of ['avgMs', 'p95Ms']) {
          const pts = w.points.filter((p) => p[op] && p[op][stat] !== undefined && p[op][stat] !== null).map((p) => [ms(p.timestamp), p[op][stat]]);
          if (pts.length) out.push({ name: `${op} ${stat.replace('Ms', '')} ${w.workerId}`, points: pts });
        }
      }
    }
    return out.slice(0, 6);
  };
  return (
    <>
      <h1>Analytics</h1>
      <div class="filters">
        <WindowPicker q={q} />
        <SearchBox label="Queue" value={q.queue} onChange={(v) => setQuery({ queue: v })} />
        <SearchBox label="Namespace" value={q.ns} onChange={(v) => setQuery({ ns: v })} />
        <SearchBox label="Task" value={q.task} onChange={(v) => setQuery({ task: v })} />
      </div>
      <p class="muted">Drag across a chart to zoom into that window; the window buttons zoom out.</p>
      <div class="grid2">
        <Chart st={status} title="Throughput" unit="messages per second" series={(d) => throughputSeries(d)} />
        <Chart st={ops} title="Push per queue" unit="messages per second" series={(d) => perQueue(d, 'pushPerSecond')} />
        <Chart st={ops} title="Pop per queue" unit="messages per second" series={(d) => perQueue(d, 'popPerSecond')} />
        <Chart st={ops} title="Ack failures and DLQ moves" unit="per bucket" series={(d) => [...perQueue(d, 'ackFailed', { other: false }).map((s) => ({ ...s, name: s.name + ' ackFailed' })), ...perQueue(d, 'dlq', { other: false }).map((s) => ({ ...s, name: s.name + ' dlq' }))].slice(0, 6)} />
        <Chart st={wm} title="Operation latency" unit="milliseconds" gauge series={lat} />
        <Chart st={lag} title="Delivery lag" unit="milliseconds" gauge series={(d) => perQueue(d, 'maxPopLagMs', { other: false })} />
        <Chart st={lag} title="Consumer time lag" unit="seconds" gauge series={(d) => perQueue(d, 'maxTimeLagSeconds', { other: false })} />
        <Chart st={lag} title="Pending" unit="messages" gauge series={(d) => perQueue(d, 'pending', { other: false })} />
        <Panel title="Messages written" st={written} id="c-written">
          {written.data && (
            <LineChart
              title="Messages written"
              unit={'messages per ' + written.data.interval}
              from={written.data.from || range.from}
              to={written.data.to || range.to}
              series={[{ name: 'written', points: written.data.dataPoints.map((p) => [ms(p.timestamp), p.messages]) }]}
            />
          )}
        </Panel>
        <Chart st={parked} title="Parked long polls" unit="pops" gauge series={(d) => perQueue(d, 'parked', { other: false })} />
        <Chart
          st={status}
          title="Errors"
          unit="per bucket"
          series={(d) => ['dbErrors', 'ackFailed', 'dlqCount'].map((k) => ({ name: k, points: (d.throughput || []).map((p) => [ms(p.timestamp), p[k] || 0]) }))}
        />
      </div>
      <Panel title="Retention and eviction" st={ret} id="retention">
        {ret.data && (
          <>
            <Table
              caption="Totals per type"
              rows={ret.data.totals}
              rowKey={(r) => r.type}
              empty="Nothing removed in this window."
              cols={[
                { key: 'type', label: 'Type' },
                { key: 'removed', label: 'Removed', num: true },
                { key: 'unconsumed', label: 'Unconsumed', num: true },
                { key: 'deadLettered', label: 'Dead-lettered', num: true },
              ]}
            />
            <h3>Latest runs</h3>
            <Table
              caption="Latest retention runs"
              rows={ret.data.runs.slice(0, 50)}
              rowKey={(r) => r.runId + r.partition}
              empty="No runs in this window."
              cols={[
                { key: 'runAt', label: 'Run', render: (r) => fmtTime(r.runAt, true) },
                { key: 'queue', label: 'Queue' },
                { key: 'partition', label: 'Partition' },
                { key: 'type', label: 'Type' },
                { key: 'removed', label: 'Removed', num: true },
              ]}
            />
          </>
        )}
      </Panel>
    </>
  );
}

// ---- System ----

// horizonText describes the oldest snapshot held on the database (postgres-stats' horizon,
// docs/operations.md "A held snapshot horizon"): its age and holder, and the replication
// slots and walsenders holding one.
function horizonText(h) {
  const o = h.holder;
  let s = 'none held';
  if (o && o.hidden) {
    s = `pid ${o.pid} (${o.applicationName || 'another role'}), ${fmtNum(o.xidAge)} transactions old; its age in seconds needs pg_read_all_stats`;
  } else if (o) {
    s = `${fmtNum(h.ageSeconds, 1)} s, pid ${o.pid} (${o.applicationName || o.backendType}, ${o.state})`;
  }
  if (h.replication.length > 0) s += ` · ${h.replication.length} replication slot(s) or walsender(s) holding one`;
  return s;
}

export function System({ q }) {
  const health = useData(get('health'), ['health']);
  const range = windowRange(q);
  const status = useData(get('api/v1/status', range), ['s-status', q.window]);
  const sm = useData(get('api/v1/analytics/system-metrics', range), ['s-sm', q.window]);
  const buffers = useData(get('api/v1/status/buffers'), ['s-buf']);
  const pg = useData(get('api/v1/analytics/postgres-stats'), ['s-pg']);
  const admin = useCan('admin');
  const jobs = useData(admin ? get('api/v1/system/jobs') : async () => null, ['s-jobs', admin]);
  const maint = useData(admin ? get('api/v1/system/maintenance') : async () => null, ['s-m', admin]);
  const popm = useData(admin ? get('api/v1/system/maintenance/pop') : async () => null, ['s-pm', admin]);
  const [dlg, setDlg] = useState(null);
  const h = health.data;
  const now = Date.now();
  const m = maint.data;
  return (
    <>
      <h1>System</h1>
      <div class="filters">
        <WindowPicker q={q} />
      </div>
      <div class="cols">
        <Panel title="This instance" st={health} id="health">
          {h && (
            <dl class="facts">
              <dt>Status</dt>
              <dd>
                <State value={h.status} />
              </dd>
              <dt>Database</dt>
              <dd>{h.database}</dd>
              <dt>Version</dt>
              <dd>{h.version}</dd>
              <dt>Worker</dt>
              <dd>{h.worker_id}</dd>
              <dt>Push maintenance</dt>
              <dd id="push-maint">{h.maintenanceMode ? 'on' : 'off'}</dd>
              <dt>Pop maintenance</dt>
              <dd id="pop-maint">{h.popMaintenanceMode ? 'on' : 'off'}</dd>
              <dt>Spool</dt>
              <dd>
                {fmtNum(h.fileBuffer && h.fileBuffer.pending)} pending, {fmtNum(h.fileBuffer && h.fileBuffer.failed)} failed
              </dd>
            </dl>
          )}
        </Panel>
        <Panel title="Spool" st={buffers} id="buffers">
          {buffers.data && (
            <dl class="facts">
              <dt>Pending</dt>
              <dd>{fmtNum(buffers.data.pending)}</dd>
              <dt>Failed</dt>
              <dd>{fmtNum(buffers.data.failed)}</dd>
              <dt>Database healthy</dt>
              <dd>{buffers.data.dbHealthy ? 'yes' : 'no'}</dd>
              <dt>Answered by</dt>
              <dd>{buffers.data.worker}</dd>
            </dl>
          )}
        </Panel>
      </div>
      <Gate need="admin">
        <Panel title="Maintenance" st={maint} id="maintenance">
          {m && (
            <div class="toggles">
              <p>
                Push maintenance is <strong>{m.maintenanceMode ? 'ON' : 'OFF'}</strong>
                {m.maintenanceMode ? ': every push goes to the spool.' : '.'}{' '}
                <button onClick={() => setDlg({ kind: 'push', enabled: !m.maintenanceMode })}>{m.maintenanceMode ? 'Turn push maintenance off…' : 'Turn push maintenance on…'}</button>
              </p>
              {popm.data && (
                <p>
                  {popm.data.message}{' '}
                  <button onClick={() => setDlg({ kind: 'pop', enabled: !popm.data.popMaintenanceMode })}>
                    {popm.data.popMaintenanceMode ? 'Turn pop maintenance off…' : 'Turn pop maintenance on…'}
                  </button>
                </p>
              )}
              <p>
                <button onClick={() => setDlg({ kind: 'stats' })}>Recompute counters…</button> <a href="metrics/prometheus">Prometheus metrics</a>
              </p>
            </div>
          )}
        </Panel>
      </Gate>
      <Panel title="Instances" st={status} id="instances">
        {status.data && (
          <Table
            caption="Broker instances seen in the window"
            rows={status.data.workers || []}
            rowKey={(r) => r.workerId + r.hostname + r.pid}
            cols={[
              { key: 'hostname', label: 'Host' },
              { key: 'workerId', label: 'Worker' },
              { key: 'pid', label: 'PID', num: true },
              { key: 'lastSeen', label: 'Last seen', render: (r) => <span class={now - ms(r.lastSeen) > 120e3 ? 'muted' : ''}>{fmtTime(r.lastSeen, true)}{now - ms(r.lastSeen) > 120e3 ? ' (stale)' : ''}</span> },
            ]}
            empty="No instance has written metrics in this window yet (they flush every minute)."
          />
        )}
      </Panel>
      <Panel title="Per instance: CPU, memory, pool" st={sm} id="sysmetrics">
        {sm.data && (
          <>
            <Table
              caption="Latest sample per instance"
              rows={(sm.data.workers || []).map((w) => ({ ...w, last: w.points[w.points.length - 1] || {} }))}
              rowKey={(r) => r.workerId + r.hostname}
              empty="No samples yet (they flush every minute)."
              cols={[
                { key: 'workerId', label: 'Worker' },
                { key: 'cpu', label: 'CPU %', num: true, render: (r) => fmtNum((r.last.cpuUserPct || 0) + (r.last.cpuSysPct || 0), 1) },
                { key: 'rss', label: 'RSS MB', num: true, render: (r) => fmtNum(r.last.rssMb, 1) },
                { key: 'pool', label: 'Pool size / active / idle', render: (r) => `${fmtNum(r.last.dbPoolSize)} / ${fmtNum(r.last.dbPoolActive)} / ${fmtNum(r.last.dbPoolIdle)}` },
                { key: 'rps', label: 'Requests/s', num: true, render: (r) => fmtNum(r.last.requestsPerSecond, 2) },
                { key: 'parked', label: 'Parked pops', num: true, render: (r) => fmtNum(r.last.parkedPops) },
              ]}
            />
            <LineChart
              title="CPU"
              unit="percent"
              gauge
              from={sm.data.timeRange.from}
              to={sm.data.timeRange.to}
              bucketMs={sm.data.bucketMinutes * 60000}
              series={(sm.data.workers || []).map((w) => ({ name: w.workerId, points: w.points.map((p) => [ms(p.timestamp), (p.cpuUserPct || 0) + (p.cpuSysPct || 0)]) }))}
            />
          </>
        )}
      </Panel>
      <Panel title="Background jobs" st={admin && !(jobs.error && jobs.error.status === 404) ? jobs : health} id="jobs">
        {admin && jobs.data ? (
          <Table
            caption="Background jobs across instances"
            rows={jobs.data.jobs}
            rowKey={(r) => r.name}
            cols={[
              { key: 'name', label: 'Job' },
              { key: 'running', label: 'State', render: (r) => (r.running ? 'running' : r.lastOutcome || 'never run') },
              { key: 'leader', label: 'Leader', render: (r) => r.leader || '—' },
              { key: 'lastRunAt', label: 'Last run', render: (r) => fmtTime(r.lastRunAt, true) },
              { key: 'lastDurationMs', label: 'Duration ms', num: true },
              { key: 'lastError', label: 'Last error', render: (r) => r.lastError || '—' },
              { key: 'runs', label: 'Runs (24 h)', num: true },
              { key: 'failures', label: 'Failures', num: true },
              { key: 'nextRunAt', label: 'Next run', render: (r) => fmtTime(r.nextRunAt, true) },
            ]}
          />
        ) : (
          h && (
            <Table
              caption="Background jobs on this instance"
              rows={Object.entries(h.jobs || {}).map(([name, j]) => ({ name, ...j }))}
              rowKey={(r) => r.name}
              cols={[
                { key: 'name', label: 'Job' },
                { key: 'state', label: 'State' },
                { key: 'leader', label: 'Leader here', render: (r) => (r.leader ? 'yes' : 'no') },
                { key: 'lastRunAt', label: 'Last run', render: (r) => fmtTime(r.lastRunAt, true) },
                { key: 'lastDurationMs', label: 'Duration ms', num: true },
                { key: 'runs', label: 'Runs', num: true },
              ]}
            />
          )
        )}
      </Panel>
      <Panel title="PostgreSQL" st={pg} id="postgres">
        {pg.data && (
          <>
            <dl class="facts">
              <dt>Database</dt>
              <dd>{pg.data.database.name}</dd>
              <dt>Size</dt>
              <dd>{fmtBytes(pg.data.database.sizeBytes)}</dd>
              <dt>Cache hit ratio</dt>
              <dd>{fmtNum(pg.data.database.cacheHitRatio * 100, 2)} %</dd>
              <dt>Connections</dt>
              <dd>
                {fmtNum(pg.data.database.connections.total)} ({fmtNum(pg.data.database.connections.active)} active)
              </dd>
              {pg.data.horizon && (
                <>
                  <dt>Oldest snapshot</dt>
                  <dd class="horizon">{horizonText(pg.data.horizon)}</dd>
                </>
              )}
            </dl>
            {pg.data.horizon && pg.data.horizon.warning && (
              <p class="banner warn horizon-warning" role="alert">
                A database session has held its snapshot for {fmtNum(pg.data.horizon.ageSeconds, 0)} s (more than
                XMIN_WARN_SECONDS, {fmtNum(pg.data.horizon.warnSeconds, 0)} s): until it ends, PostgreSQL cannot remove
                dead row versions and the queue tables slow down. End that transaction (commit it, or
                SELECT pg_terminate_backend({pg.data.horizon.holder.pid})) or fix the client that leaves it open.
              </p>
            )}
            <Table
              caption="Tables"
              rows={pg.data.tables}
              rowKey={(r) => r.name}
              cols={[
                { key: 'name', label: 'Table' },
                { key: 'rows', label: 'Rows', num: true },
                { key: 'totalBytes', label: 'Size', num: true, render: (r) => fmtBytes(r.totalBytes) },
                { key: 'seqScans', label: 'Seq scans', num: true },
                { key: 'indexScans', label: 'Index scans', num: true },
                { key: 'deadRows', label: 'Dead rows', num: true },
                { key: 'lastVacuum', label: 'Last vacuum', render: (r) => fmtTime(r.lastVacuum, true) },
              ]}
            />
          </>
        )}
      </Panel>
      {dlg && dlg.kind === 'push' && (
        <Confirm
          title={`Turn push maintenance ${dlg.enabled ? 'on' : 'off'}`}
          effect={dlg.enabled ? 'Every push goes to the spool (file buffer) until it is turned off; it then drains into the database.' : 'Pushes go to the database again; the spool drains.'}
          confirmLabel={dlg.enabled ? 'Turn on' : 'Turn off'}
          run={() => api('api/v1/system/maintenance', { method: 'POST', body: { enabled: dlg.enabled } })}
          onClose={() => setDlg(null)}
        />
      )}
      {dlg && dlg.kind === 'pop' && (
        <Confirm
          title={`Turn pop maintenance ${dlg.enabled ? 'on' : 'off'}`}
          effect={dlg.enabled ? 'Every pop answers empty until it is turned off.' : 'Pops deliver again.'}
          confirmLabel={dlg.enabled ? 'Turn on' : 'Turn off'}
          run={() => api('api/v1/system/maintenance/pop', { method: 'POST', body: { enabled: dlg.enabled } })}
          onClose={() => setDlg(null)}
        />
      )}
      {dlg && dlg.kind === 'stats' && (
        <Confirm
          title="Recompute counters"
          danger={false}
          effect="Recomputes every counter now instead of at the next stats run."
          confirmLabel="Recompute"
          run={() => api('api/v1/stats/refresh', { method: 'POST', body: {} })}
          onClose={() => setDlg(null)}
        />
      )}
    </>
  );
}
