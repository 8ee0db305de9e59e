// Overview (docs/api/dashboard.md §2.1) and the queue pages (§2.2, §2.3).
import { useState } from 'preact/hooks';
import { api, qs, seg } from './api.js';
import {
  useData, get, Panel, Table, Pager, PageSize, pageLimit, link, go, setQuery, fmtNum, fmtDur, fmtTime, Gate, Confirm, Field,
  SearchBox, useCan, CopyButton, State, windowRange, announce, useAsync, Problem, Dialog, refreshNow, Pending,
} from './lib.jsx';
import { LineChart } from './charts.jsx';

export function curlSnippets() {
  const origin = location.origin + location.pathname.replace(/[^/]*$/, '');
  const auth = ' -H "Authorization: Bearer $QUEEN_TOKEN"';
  return [
    `curl -X POST ${origin}api/v1/push${auth} -H 'Content-Type: application/json' -d '{"items":[{"queue":"demo","payload":{"hello":"world"}}]}'`,
    `curl '${origin}api/v1/pop/queue/demo?wait=false'${auth}`,
    `curl -X POST ${origin}api/v1/ack${auth} -H 'Content-Type: application/json' -d '{"transactionId":"<id>","partitionId":"<partitionId>","status":"completed"}'`,
  ];
}

function Onboarding() {
  const [push, pop, ack] = curlSnippets();
  return (
    <section class="panel onboarding" aria-labelledby="onb-h">
      <h2 id="onb-h">No queues yet</h2>
      <p>A queue appears with its first message. Push one, pop it, ack it:</p>
      {[push, pop, ack].map((c, i) => (
        <div class="snippet" key={i}>
          <pre>{c}</pre>
          <CopyButton text={c} what={['push command', 'pop command', 'ack command'][i]} />
        </div>
      ))}
    </section>
  );
}

function Tile({ label, value, sub, href }) {
  const body = (
    <>
      <span class="tile-label">{label}</span>
      <span class="tile-value">{value}</span>
      {sub && <span class="tile-sub">{sub}</span>}
    </>
  );
  return <li class="tile">{href ? <a href={href}>{body}</a> : body}</li>;
}

export function throughputSeries(status) {
  const tp = (status && status.throughput) || [];
  const pick = (k) => tp.map((p) => [+new Date(p.timestamp), p[k] || 0]);
  return [
    { name: 'ingested/s', points: pick('ingestedPerSecond') },
    { name: 'processed/s', points: pick('processedPerSecond') },
    { name: 'popped/s', points: pick('popPerSecond') },
  ];
}

export function Overview({ q }) {
  const ov = useData(get('api/v1/resources/overview'), ['ov']);
  const range = windowRange(q);
  // The tiles are the page's first data; the other panels load once they are drawn.
  const after = { after: ov.data !== undefined || !!ov.error };
  const st = useData(get('api/v1/status', range), ['status', q.window, q.from, q.to], after);
  const lag = useData(get('api/v1/consumer-groups/lagging', { minLagSeconds: 60, limit: 10 }), ['lagging'], after);
  const big = useData(get('api/v1/status/queues', { sort: 'pending', order: 'desc', limit: 10 }), ['big'], after);
  const o = ov.data;
  const s = st.data;
  const last = s && s.throughput && s.throughput.length ? s.throughput[s.throughput.length - 1] : null;
  const topErr = s && s.deadLetterQueue && s.deadLetterQueue.topErrors && s.deadLetterQueue.topErrors[0];
  return (
    <>
      <h1>Overview</h1>
      {o && o.queues === 0 && <Onboarding />}
      <Panel title="System at a glance" st={ov} id="tiles">
        {o && (
          <>
            {o.statsAge > 20 && <p class="badge warn">counters {o.statsAge} s old</p>}
            <ul class="tiles">
              <Tile label="Queues" value={fmtNum(o.queues)} href="#/queues" />
              <Tile label="Partitions" value={fmtNum(o.partitions)} />
              <Tile label="Namespaces" value={fmtNum(o.namespaces)} />
              <Tile label="Tasks" value={fmtNum(o.tasks)} />
              <Tile label="Total messages" value={fmtNum(o.messages.total)} href="#/messages" />
              <Tile label="Pending" value={fmtNum(o.messages.pending)} href={link(['messages'], { status: 'pending' })} />
              <Tile label="Processing" value={fmtNum(o.messages.processing)} href={link(['messages'], { status: 'processing' })} />
              <Tile label="Completed" value={fmtNum(o.messages.completed)} />
              <Tile label="Failed" value={fmtNum(o.messages.failed)} />
              <Tile
                label="Dead letters"
                value={fmtNum(o.messages.deadLetter)}
                href="#/dlq"
                sub={topErr ? `top: ${topErr.error} (${fmtNum(topErr.count)})` : undefined}
              />
              <Tile label="Time lag avg / max" value={`${fmtDur(o.lag.time.avg)} / ${fmtDur(o.lag.time.max)}`} href="#/groups" />
              <Tile label="Offset lag avg / max" value={`${fmtNum(o.lag.offset.avg, 1)} / ${fmtNum(o.lag.offset.max)}`} />
              <Tile label="Ingested /s" value={fmtNum(o.throughput.ingestedPerSecond, 2)} />
              <Tile label="Processed /s" value={last ? fmtNum(last.processedPerSecond, 2) : '—'} />
              <Tile label="Instances" value={s ? fmtNum((s.workers || []).length) : '—'} href="#/system" />
            </ul>
            <p class="muted">statsAge: {o.statsAge ?? '—'} s</p>
          </>
        )}
      </Panel>
      <Panel title="Throughput, last hour" st={st} id="throughput">
        {s && (
          <LineChart
            title="Throughput"
            unit="messages per second"
            series={throughputSeries(s)}
            from={s.timeRange.from}
            to={s.timeRange.to}
            bucketMs={s.bucketMinutes * 60000}
          />
        )}
      </Panel>
      <div class="cols">
        <Panel title="Largest backlogs" st={big} id="backlogs">
          {big.data && (
            <Table
              caption="Ten queues with the most pending messages"
              rows={big.data.queues}
              rowKey={(r) => r.name}
              onOpen={(r) => go(['queues', r.name])}
              cols={[
                { key: 'name', label: 'Queue', render: (r) => <a href={link(['queues', r.name])}>{r.name}</a> },
                { key: 'pending', label: 'Pending', num: true, render: (r) => fmtNum(r.messages && r.messages.pending) },
                { key: 'lag', label: 'Max lag', num: true, render: (r) => fmtDur(r.maxTimeLag) },
              ]}
              empty="No queues."
            />
          )}
        </Panel>
        <Panel title="Worst lagging (≥ 60 s)" st={lag} id="lagging">
          {lag.data && (
            <Table
              caption="Ten consumer group and queue pairs with the largest time lag"
              rows={lag.data.slice(0, 10)}
              rowKey={(r) => r.consumer_group + '/' + r.queue_name + '/' + r.partition_id}
              onOpen={(r) => go(['groups', r.consumer_group], { queue: r.queue_name })}
              cols={[
                { key: 'g', label: 'Group', render: (r) => <a href={link(['groups', r.consumer_group], { queue: r.queue_name })}>{r.consumer_group}</a> },
                { key: 'q', label: 'Queue', render: (r) => r.queue_name },
                { key: 'p', label: 'Partition', render: (r) => r.partition_name },
                { key: 'l', label: 'Time lag', num: true, render: (r) => fmtDur(r.time_lag_seconds) },
                { key: 'o', label: 'Offset lag', num: true, render: (r) => fmtNum(r.offset_lag) },
              ]}
              empty="No consumer lags by a minute or more."
            />
          )}
        </Panel>
      </div>
    </>
  );
}

// ---- Queues ----

export function Queues({ q }) {
  const limit = pageLimit(q.limit);
  const query = { namespace: q.ns, task: q.task, search: q.q, sort: q.sort || 'name', order: q.order, limit, offset: q.offset };
  const list = useData(get('api/v1/status/queues', query), ['queues', query]);
  // The list is the page's first data; the filters' choices and the rate columns follow it.
  const after = list.data !== undefined || !!list.error;
  const nss = useData(get('api/v1/resources/namespaces', { limit: 1000 }), ['nss'], { live: false, after });
  const tasks = useData(get('api/v1/resources/tasks', { limit: 1000 }), ['tasks'], { live: false, after });
  const ops = useData(get('api/v1/analytics/queue-ops', { limit: 100, ...windowRange({ window: '15m' }) }), ['ops'], { after });
  const rates = {};
  for (const s of (ops.data && ops.data.queues) || []) {
    const p = s.points[s.points.length - 1];
    if (p) rates[s.queue] = p;
  }
  const d = list.data;
  const filtered = q.q || q.ns || q.task;
  return (
    <>
      <h1>Queues</h1>
      <div class="filters" role="search">
        <SearchBox label="Search queue names" value={q.q} onChange={(v) => setQuery({ q: v, offset: undefined })} />
        <Field label="Namespace">
          <select value={q.ns || ''} onChange={(e) => setQuery({ ns: e.currentTarget.value, offset: undefined })}>
            <option value="">All namespaces</option>
            {((nss.data && nss.data.namespaces) || []).map((n) => (
              <option key={n.namespace} value={n.namespace}>
                {n.namespace || '(none)'}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Task">
          <select value={q.task || ''} onChange={(e) => setQuery({ task: e.currentTarget.value, offset: undefined })}>
            <option value="">All tasks</option>
            {((tasks.data && tasks.data.tasks) || []).map((n) => (
              <option key={n.task} value={n.task}>
                {n.task || '(none)'}
              </option>
            ))}
          </select>
        </Field>
        <PageSize value={limit} onChange={(l) => setQuery({ limit: l === 100 ? undefined : l, offset: undefined })} />
        {filtered && (
          <button class="small" onClick={() => setQuery({ q: undefined, ns: undefined, task: undefined, offset: undefined })}>
            Clear filters
          </button>
        )}
      </div>
      <Panel title={d ? `${fmtNum(d.total ?? d.queues.length)} queues` : 'Queues'} st={list} id="queue-list">
        {d && d.queues.length === 0 && !q.offset && !filtered && (
          <p class="empty">
            No queues yet: push a message and one appears. <a href="#/">See the onboarding commands</a>.
          </p>
        )}
        {d && (d.queues.length > 0 || q.offset || filtered) && (
          <>
            <Table
              caption="Queues"
              rows={d.queues}
              resetKey={q.offset}
              rowKey={(r) => r.name}
              sort={query.sort}
              order={q.order || (['name', 'namespace', 'task'].includes(query.sort) ? 'asc' : 'desc')}
              onSort={(sort, order) => setQuery({ sort, order, offset: undefined })}
              onOpen={(r) => go(['queues', r.name])}
              empty={filtered ? <>Nothing matches. <button class="link" onClick={() => setQuery({ q: undefined, ns: undefined, task: undefined })}>Clear filters</button></> : 'No queues.'}
              cols={[
                { key: 'name', label: 'Name', sort: 'name', render: (r) => <a href={link(['queues', r.name])}>{r.name}</a> },
                // The operator's listing spans tenants and names each queue's.
                ...(d.queues.some((r) => r.tenant !== undefined) ? [{ key: 'tenant', label: 'Tenant', render: (r) => r.tenant || '(default)' }] : []),
                { key: 'namespace', label: 'Namespace', sort: 'namespace', render: (r) => r.namespace || '—' },
                { key: 'task', label: 'Task', sort: 'task', render: (r) => r.task || '—' },
                { key: 'partitions', label: 'Partitions', sort: 'partitions', num: true },
                { key: 'total', label: 'Total', sort: 'total', num: true, render: (r) => fmtNum(r.messages && r.messages.total) },
                { key: 'pending', label: 'Pending', sort: 'pending', num: true, render: (r) => fmtNum(r.messages && r.messages.pending) },
                { key: 'processing', label: 'Processing', sort: 'processing', num: true, render: (r) => fmtNum(r.messages && r.messages.processing) },
                { key: 'deadLetter', label: 'DLQ', sort: 'deadLetter', num: true, render: (r) => fmtNum(r.deadLetter) },
                { key: 'lag', label: 'Max lag', sort: 'lag', num: true, render: (r) => fmtDur(r.maxTimeLag) },
                { key: 'push', label: 'Push/s', num: true, render: (r) => fmtNum(rates[r.name] && rates[r.name].pushPerSecond, 2) },
                { key: 'pop', label: 'Pop/s', num: true, render: (r) => fmtNum(rates[r.name] && rates[r.name].popPerSecond, 2) },
                { key: 'createdAt', label: 'Created', sort: 'createdAt', render: (r) => fmtTime(r.createdAt, true) },
              ]}
            />
            <Pager offset={q.offset} limit={limit} count={d.queues.length} total={d.total} onOffset={(o) => setQuery({ offset: o || undefined })} />
          </>
        )}
      </Panel>
    </>
  );
}

// ---- Queue detail ----

const TABS = [
  ['partitions', 'Partitions'],
  ['groups', 'Consumer groups'],
  ['lag', 'Lag heatmap'],
  ['messages', 'Messages'],
  ['charts', 'Charts'],
  ['settings', 'Settings'],
];

export function QueueDetail({ name, q }) {
  const tab = q.tab || 'partitions';
  const res = useData(get('api/v1/resources/queues/' + seg(name), { limit: 0 }), ['queue', name]);
  const canRW = useCan('read-write');
  const [publish, setPublish] = useState(false);
  const [del, setDel] = useState(false);
  const notFound = (
    <p class="alert">
      Queue <code>{name}</code> not found (deleted?). <a href="#/queues">Back to the queue list</a>
    </p>
  );
  // Outside the 404 branch too: after a deletion the page reloads into it and the answer stays.
  const delDialog = del && (
    <Confirm
      title={`Delete queue ${name}`}
      effect="Removes the queue with every partition, message, consumer cursor, DLQ entry and trace. Later acks of its messages get “Message not found”."
      confirmLabel="Delete queue"
      typeName={name}
      run={() => api('api/v1/resources/queues/' + seg(name), { method: 'DELETE' })}
      onClose={() => setDel(false)}
    />
  );
  if (res.error && res.error.status === 404)
    return (
      <>
        <h1>Queue {name}</h1>
        {notFound}
        {delDialog}
      </>
    );
  const d = res.data;
  const t = d && d.totals;
  return (
    <>
      <nav aria-label="Breadcrumb" class="crumbs">
        <a href="#/queues">Queues</a> / <span>{name}</span>
      </nav>
      <h1>Queue {name}</h1>
      <Pending st={res} />
      <Problem error={res.error} />
      {d && (
        <div class="qhead">
          <dl class="facts">
            <dt>Namespace</dt>
            <dd>{d.namespace || '—'}</dd>
            <dt>Task</dt>
            <dd>{d.task || '—'}</dd>
            <dt>Created</dt>
            <dd>{fmtTime(d.createdAt, true)}</dd>
            <dt>Partitions</dt>
            <dd>{fmtNum(d.partitionCount)}</dd>
            {t &&
              ['total', 'pending', 'processing', 'completed', 'failed', 'deadLetter'].map((k) => [
                <dt key={k + 't'}>{k === 'deadLetter' ? 'Dead letters' : k[0].toUpperCase() + k.slice(1)}</dt>,
                <dd key={k + 'd'}>{fmtNum(t[k])}</dd>,
              ])}
          </dl>
          <div class="qlinks">
            <a href={link(['messages'], { queue: name })}>Messages of this queue</a>
            <a href={link(['dlq'], { queue: name })}>Dead letters of this queue</a>
            <Gate need="read-write">
              <button onClick={() => setPublish(true)}>Publish a test message</button>
            </Gate>
          </div>
        </div>
      )}
      {t && t.deadLetter > 0 && (
        <p class="banner warn">
          {fmtNum(t.deadLetter)} dead-lettered messages. <a href={link(['dlq'], { queue: name })}>Review them</a>
        </p>
      )}
      <div role="tablist" aria-label="Queue views" class="tabs">
        {TABS.map(([k, label]) => (
          <a key={k} role="tab" aria-selected={tab === k} href={link(['queues', name], { tab: k })} id={'tab-' + k}>
            {label}
          </a>
        ))}
      </div>
      <div role="tabpanel" aria-labelledby={'tab-' + tab}>
        {tab === 'partitions' && <Partitions name={name} q={q} />}
        {tab === 'groups' && <QueueGroups name={name} />}
        {tab === 'lag' && <Heatmap name={name} q={q} />}
        {tab === 'messages' && <QueueMessages name={name} />}
        {tab === 'charts' && <QueueCharts name={name} q={q} />}
        {tab === 'settings' && <Settings name={name} options={d && d.options} canEdit={canRW} />}
      </div>
      <Gate need="admin">
        <section class="panel danger-zone" aria-labelledby="dz-h">
          <h2 id="dz-h">Danger zone</h2>
          <button class="danger" onClick={() => setDel(true)}>
            Delete queue…
          </button>
        </section>
      </Gate>
      {publish && <Publish queue={name} onClose={() => setPublish(false)} />}
      {delDialog}
    </>
  );
}

function Partitions({ name, q }) {
  const limit = pageLimit(q.plimit);
  const query = { search: q.psearch, sort: q.psort || 'name', order: q.porder, limit, offset: q.poffset };
  const st = useData(get('api/v1/status/queues/' + seg(name), query), ['parts', name, query]);
  const d = st.data;
  return (
    <Panel title="Partitions" st={st} id="partitions">
      <div class="filters">
        <SearchBox label="Search partition names" value={q.psearch} onChange={(v) => setQuery({ psearch: v, poffset: undefined })} />
        <PageSize value={limit} onChange={(l) => setQuery({ plimit: l === 100 ? undefined : l, poffset: undefined })} />
      </div>
      {d && (
        <>
          <Table
            caption="Partitions"
            rows={d.partitions}
            resetKey={q.poffset}
            rowKey={(r) => r.id}
            sort={query.sort}
            order={q.porder || (query.sort === 'name' ? 'asc' : 'desc')}
            onSort={(s, o) => setQuery({ psort: s, porder: o, poffset: undefined })}
            onOpen={(r) => go(['messages'], { queue: name, partition: r.name })}
            cols={[
              { key: 'name', label: 'Partition', sort: 'name', render: (r) => <a href={link(['messages'], { queue: name, partition: r.name })}>{r.name}</a> },
              { key: 'total', label: 'Total', sort: 'total', num: true, render: (r) => fmtNum(r.messages.total) },
              { key: 'pending', label: 'Pending', sort: 'pending', num: true, render: (r) => fmtNum(r.messages.pending) },
              { key: 'processing', label: 'Processing', num: true, render: (r) => fmtNum(r.messages.processing) },
              { key: 'completed', label: 'Completed', num: true, render: (r) => fmtNum(r.messages.completed) },
              { key: 'dl', label: 'DLQ', num: true, render: (r) => fmtNum(r.messages.deadLetter) },
              { key: 'lag', label: 'Max lag', sort: 'lag', num: true, render: (r) => fmtDur(r.maxTimeLag) },
              { key: 'groups', label: 'Groups', num: true, render: (r) => fmtNum(r.stats && r.stats.consumerGroups) },
              { key: 'leases', label: 'Leases', num: true, render: (r) => fmtNum(r.stats && r.stats.activeLeases) },
              { key: 'oldest', label: 'Oldest', render: (r) => fmtTime(r.oldestMessage, true) },
              { key: 'newest', label: 'Newest', render: (r) => fmtTime(r.newestMessage, true) },
              { key: 'act', label: 'Last activity', sort: 'lastActivity', render: (r) => fmtTime(r.lastActivity, true) },
              { key: 'consumed', label: 'Consumed', num: true, render: (r) => fmtNum(r.cursor && r.cursor.totalConsumed) },
            ]}
          />
          <Pager offset={q.poffset} limit={limit} count={d.partitions.length} total={d.partitionCount} onOffset={(o) => setQuery({ poffset: o || undefined })} />
        </>
      )}
    </Panel>
  );
}

function QueueGroups({ name }) {
  const st = useData(get('api/v1/consumer-groups', { queue: name, limit: 1000 }), ['qgroups', name]);
  return (
    <Panel title="Consumer groups" st={st} id="qgroups">
      {st.data && <GroupTable rows={st.data.filter((g) => g.queueName === name || (g.topics || []).includes(name))} />}
    </Panel>
  );
}

export function GroupName({ name }) {
  if (name === '__QUEUE_MODE__')
    return (
      <span class="chip" title="__QUEUE_MODE__">
        queue mode
      </span>
    );
  return name;
}

export function GroupTable({ rows }) {
  return (
    <Table
      caption="Consumer groups"
      rows={rows}
      rowKey={(r) => r.name + '/' + r.queueName}
      onOpen={(r) => go(['groups', r.name], { queue: r.queueName })}
      empty="No consumer group has popped from this queue yet."
      cols={[
        { key: 'name', label: 'Group', render: (r) => <a href={link(['groups', r.name], { queue: r.queueName })}><GroupName name={r.name} /></a> },
        { key: 'queueName', label: 'Queue', render: (r) => <a href={link(['queues', r.queueName])}>{r.queueName}</a> },
        { key: 'members', label: 'Partitions', num: true },
        { key: 'partitionsWithLag', label: 'With lag', num: true },
        { key: 'totalLag', label: 'Total lag', num: true, render: (r) => fmtNum(r.totalLag) },
        { key: 'maxTimeLag', label: 'Max time lag', num: true, render: (r) => fmtDur(r.maxTimeLag) },
        { key: 'state', label: 'State', render: (r) => <State value={r.state} /> },
        { key: 'mode', label: 'Subscription', render: (r) => (r.subscriptionMode || '—') + (r.subscriptionTimestamp ? ' @ ' + fmtTime(r.subscriptionTimestamp, true) : '') },
      ]}
    />
  );
}

/** lagClass maps a time lag to the heatmap's six steps (§2.3). */
export function lagStep(sec) {
  if (!(sec > 0)) return 0;
  if (sec < 10) return 1;
  if (sec < 60) return 2;
  if (sec < 300) return 3;
  if (sec < 3600) return 4;
  return 5;
}
const STEP_LABEL = ['caught up', '< 10 s', '< 1 min', '< 5 min', '< 1 h', '≥ 1 h'];

function Heatmap({ name, q }) {
  const limit = 1000;
  const offset = Number(q.hoffset) || 0;
  const st = useData(get('api/v1/consumer-groups/lagging', { queue: name, minLagSeconds: 0, limit, offset }), ['heat', name, offset]);
  const [pick, setPick] = useState(null);
  const rows = st.data || [];
  const groups = [...new Set(rows.map((r) => r.consumer_group))].sort();
  const parts = new Map();
  for (const r of rows) {
    const p = parts.get(r.partition_name) || { name: r.partition_name, id: r.partition_id, worst: 0, cells: {} };
    p.cells[r.consumer_group] = r;
    p.worst = Math.max(p.worst, r.time_lag_seconds || 0);
    parts.set(r.partition_name, p);
  }
  const list = [...parts.values()].sort((a, b) => b.worst - a.worst || a.name.localeCompare(b.name)).slice(0, 100);
  const firstCell = { done: false }; // roving tabindex: the first cell drawn takes Tab
  const move = (e) => {
    const cell = e.target.closest('[data-r]');
    if (!cell) return;
    const r = +cell.dataset.r;
    const c = +cell.dataset.c;
    const d = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] }[e.key];
    if (!d) return;
    e.preventDefault();
    // Skip pairs without a cursor (no cell) in the direction of the arrow.
    for (let k = 1; k <= 200; k++) {
      const next = e.currentTarget.querySelector(`[data-r="${r + d[0] * k}"][data-c="${c + d[1] * k}"]`);
      if (next) {
        cell.tabIndex = -1;
        next.tabIndex = 0;
        next.focus();
        return;
      }
    }
  };
  return (
    <Panel title="Lag heatmap: partition × consumer group" st={st} id="heatmap">
      <ul class="legend steps" aria-label="Time lag steps">
        {STEP_LABEL.map((l, i) => (
          <li key={i}>
            <span class={'cell l' + i} aria-hidden="true" />
            {l}
          </li>
        ))}
      </ul>
      {st.data && !list.length && <p class="empty">No consumer group reads this queue yet.</p>}
      {list.length > 0 && (
        <div class="table-wrap">
          <table class="heat" onKeyDown={move}>
            <caption class="sr-only">Time lag per partition and consumer group; worst partitions first</caption>
            <thead>
              <tr>
                <th scope="col">Partition</th>
                {groups.map((g) => (
                  <th scope="col" key={g}>
                    <GroupName name={g} />
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {list.map((p, ri) => (
                <tr key={p.name}>
                  <th scope="row">{p.name}</th>
                  {groups.map((g, ci) => {
                    const c = p.cells[g];
                    if (!c) return <td key={g} class="cell-none">—</td>;
                    const step = lagStep(c.time_lag_seconds);
                    return (
                      <td key={g} class="hcell">
                        <button
                          class={'cell l' + step}
                          data-r={ri}
                          data-c={ci}
                          tabIndex={firstCell.done ? -1 : ((firstCell.done = true), 0)}
                          aria-label={`${p.name}, ${g}: ${STEP_LABEL[step]}, time lag ${fmtDur(c.time_lag_seconds)}, offset lag ${c.offset_lag}`}
                          title={`time lag ${fmtDur(c.time_lag_seconds)}, offset lag ${c.offset_lag}`}
                          onClick={() => setPick(c)}
                        >
                          {c.offset_lag > 0 ? fmtNum(c.offset_lag) : ''}
                        </button>
                      </td>
                    );
                  })}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {pick && (
        <Dialog title={`${pick.partition_name} × ${pick.consumer_group}`} onClose={() => setPick(null)}>
          <p>
            Time lag {fmtDur(pick.time_lag_seconds)}, offset lag {fmtNum(pick.offset_lag)}, oldest unconsumed {fmtTime(pick.oldest_unconsumed_at, true)}.
          </p>
          <div class="dlg-actions">
            <a class="button" href={link(['groups', pick.consumer_group], { queue: name, seekPartition: pick.partition_name })}>
              Open in the group view
            </a>
            <button onClick={() => setPick(null)}>Close</button>
          </div>
        </Dialog>
      )}
    </Panel>
  );
}

function QueueMessages({ name }) {
  const st = useData(get('api/v1/status/queues/' + seg(name) + '/messages', { limit: 50 }), ['qmsgs', name]);
  return (
    <Panel title="Newest 50 messages" st={st} id="qmsgs">
      {st.data && (
        <Table
          caption="Newest messages"
          rows={st.data}
          rowKey={(r) => r.id}
          onOpen={(r) => go(['messages', r.partitionId, r.transactionId])}
          empty="No messages stored."
          cols={[
            { key: 'createdAt', label: 'Created', render: (r) => fmtTime(r.createdAt) },
            { key: 'partition', label: 'Partition' },
            { key: 'transactionId', label: 'Transaction ID', render: (r) => <a href={link(['messages', r.partitionId, r.transactionId])}>{r.transactionId}</a> },
            { key: 'status', label: 'Status' },
          ]}
        />
      )}
    </Panel>
  );
}

function QueueCharts({ name, q }) {
  const range = windowRange(q);
  const st = useData(get('api/v1/status', { ...range, queue: name }), ['qstatus', name, q.window]);
  const lag = useData(get('api/v1/analytics/queue-lag', { ...range, queue: name }), ['qlag', name, q.window]);
  const s = st.data;
  const l = lag.data && lag.data.queues && lag.data.queues[0];
  return (
    <>
      <Panel title="Throughput" st={st} id="qthroughput">
        {s && <LineChart title="Throughput" unit="messages per second" series={throughputSeries(s)} from={s.timeRange.from} to={s.timeRange.to} bucketMs={s.bucketMinutes * 60000} />}
      </Panel>
      <Panel title="Depth and lag" st={lag} id="qlag">
        {lag.data && (
          <LineChart
            title="Depth"
            unit="messages"
            gauge
            bucketMs={lag.data.bucketMinutes * 60000}
            from={lag.data.timeRange.from}
            to={lag.data.timeRange.to}
            series={[
              { name: 'pending', points: ((l && l.points) || []).map((p) => [+new Date(p.timestamp), p.pending]) },
              { name: 'processing', points: ((l && l.points) || []).map((p) => [+new Date(p.timestamp), p.processing]) },
            ]}
          />
        )}
      </Panel>
    </>
  );
}

const OPTION_KEYS = [
  'leaseTime', 'maxSize', 'ttl', 'retryLimit', 'retryDelay', 'deadLetterQueue', 'dlqAfterMaxRetries', 'priority',
  'delayedProcessing', 'windowBuffer', 'retentionSeconds', 'completedRetentionSeconds', 'retentionEnabled',
  'encryptionEnabled', 'maxWaitTimeSeconds', 'maxQueueSize',
];

function Settings({ name, options, canEdit }) {
  const [form, setForm] = useState(null);
  const [review, setReview] = useState(false);
  const [st, run] = useAsync();
  if (!options)
    return (
      <section class="panel">
        <h2>Settings</h2>
        <p class="empty">The broker did not send this queue's options (M9), so they are read-only and not shown.</p>
      </section>
    );
  const keys = Object.keys(options).length ? Object.keys(options) : OPTION_KEYS;
  const cur = form || options;
  const changed = keys.filter((k) => JSON.stringify(cur[k]) !== JSON.stringify(options[k]));
  const set = (k, v) => setForm({ ...cur, [k]: v });
  return (
    <section class="panel" aria-labelledby="set-h">
      <h2 id="set-h">Settings</h2>
      <form
        class="settings"
        onSubmit={(e) => {
          e.preventDefault();
          setReview(true);
        }}
      >
        {keys.map((k) => {
          const v = cur[k];
          if (typeof v === 'boolean')
            return (
              <label class="check" key={k}>
                <input type="checkbox" checked={v} disabled={!canEdit} onChange={(e) => set(k, e.currentTarget.checked)} />
                {k}
              </label>
            );
          return (
            <label class="field" key={k}>
              <span>{k}</span>
              <input type="number" value={v ?? ''} disabled={!canEdit} onInput={(e) => set(k, e.currentTarget.value === '' ? null : Number(e.currentTarget.value))} />
            </label>
          );
        })}
        {canEdit && (
          <div class="dlg-actions">
            <button type="submit" class="primary" disabled={!changed.length}>
              Review {changed.length} change{changed.length === 1 ? '' : 's'}
            </button>
          </div>
        )}
      </form>
      {review && (
        <Dialog title="Save queue options" onClose={() => setReview(false)}>
          <p>configure replaces every option of the queue; these change:</p>
          <ul>
            {changed.map((k) => (
              <li key={k}>
                <code>{k}</code>: {JSON.stringify(options[k])} → {JSON.stringify(cur[k])}
              </li>
            ))}
          </ul>
          {st.error && <p class="alert">{st.error.message}</p>}
          {st.result && <pre class="json">{JSON.stringify(st.result, null, 2)}</pre>}
          <div class="dlg-actions">
            {!st.result && (
              <button
                class="primary"
                disabled={st.busy}
                onClick={() =>
                  run(() => api('api/v1/configure', { method: 'POST', body: { queue: name, options: cur } })).then((r) => {
                    if (r) {
                      announce('Options saved');
                      setForm(null);
                      refreshNow();
                    }
                  })
                }
              >
                Save
              </button>
            )}
            <button onClick={() => setReview(false)}>{st.result ? 'Close' : 'Cancel'}</button>
          </div>
        </Dialog>
      )}
    </section>
  );
}

function Publish({ queue, onClose }) {
  const [partition, setPartition] = useState('Default');
  const [payload, setPayload] = useState('{\n  "hello": "world"\n}');
  const [txn, setTxn] = useState('');
  const [err, setErr] = useState(null);
  const [results, setResults] = useState([]);
  const send = async (e) => {
    e.preventDefault();
    let body;
    try {
      body = JSON.parse(payload);
    } catch (x) {
      setErr('Payload is not valid JSON: ' + x.message);
      return;
    }
    setErr(null);
    const item = { queue, partition: partition || 'Default', payload: body };
    if (txn) item.transactionId = txn;
    try {
      const r = await api('api/v1/push', { method: 'POST', body: { items: [item] } });
      const one = Array.isArray(r) ? r[0] : r;
      setResults((rs) => [one, ...rs].slice(0, 5));
      announce(`Publish: ${one.status}${one.error ? ' ' + one.error : ''}`);
      refreshNow();
    } catch (x) {
      setErr(x.message);
    }
  };
  return (
    <Dialog title={`Publish to ${queue}`} onClose={onClose}>
      <form onSubmit={send}>
        <Field label="Partition" value={partition} onInput={setPartition} />
        <label class="field">
          <span>JSON payload</span>
          <textarea rows="6" value={payload} onInput={(e) => setPayload(e.currentTarget.value)} spellcheck={false} />
        </label>
        <Field label="Transaction ID (optional)" value={txn} onInput={setTxn} />
        {err && (
          <p class="alert" role="alert">
            {err}
          </p>
        )}
        <ul class="results" aria-label="Publish results">
          {results.map((r, i) => (
            <li key={i} class="result-item">
              <strong class="pub-status">{r.status}</strong> {r.transaction_id}
              {r.error ? ' — ' + r.error : ''}
            </li>
          ))}
        </ul>
        <div class="dlg-actions">
          <button type="submit" class="primary">
            Publish
          </button>
          <button type="button" onClick={onClose}>
            Close
          </button>
        </div>
      </form>
    </Dialog>
  );
}
