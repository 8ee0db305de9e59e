// Messages (docs/api/dashboard.md §2.4), dead letters (§2.5), consumer groups (§2.6), traces (§2.7).
import { useState, useEffect } from 'preact/hooks';
import { api, qs, seg } from './api.js';
import {
  useData, get, Panel, Table, Pager, PageSize, pageLimit, link, go, setQuery, fmtNum, fmtDur, fmtTime, fmtBytes, Gate, Confirm, Field,
  SearchBox, useCan, CopyButton, toTimeInput, fromTimeInput, zoneName, State, announce, Problem, Dialog, refreshNow, useSelection, useAsync, WINDOWS, Pending,
} from './lib.jsx';
import { Bars } from './charts.jsx';
import { GroupName, GroupTable } from './overview.jsx';

// ---- Messages ----

const STATUSES = ['pending', 'processing', 'completed', 'dead_letter'];
const PRESETS = { '15m': 15, '1h': 60, '24h': 1440, '7d': 10080 };

function msgWindow(q) {
  if (q.from || q.to) return { from: q.from, to: q.to };
  const min = PRESETS[q.window || '1h'] || 60;
  const to = new Date();
  return { from: new Date(to - min * 60000).toISOString(), to: to.toISOString() };
}

export function Messages({ q }) {
  const limit = pageLimit(q.limit);
  const exact = q.transactionId || q.traceId;
  const range = exact ? {} : msgWindow(q);
  const query = {
    queue: q.queue, partition: q.partition, ns: q.ns, task: q.task, status: q.status, transactionId: q.transactionId,
    traceId: q.traceId, ...range, limit, offset: q.offset,
  };
  // The window's end moves with the clock, so it is not part of the load key.
  const st = useData(get('api/v1/messages', query), ['msgs', { ...query, from: q.from || q.window, to: q.to }]);
  const d = st.data;
  const filtered = q.queue || q.partition || q.ns || q.task || q.status || exact;
  return (
    <>
      <h1>Messages</h1>
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <SearchBox label="Queue" value={q.queue} onChange={(v) => setQuery({ queue: v, offset: undefined })} />
        <SearchBox label="Partition" value={q.partition} onChange={(v) => setQuery({ partition: v, offset: undefined })} />
        <SearchBox label="Namespace" value={q.ns} onChange={(v) => setQuery({ ns: v, offset: undefined })} />
        <SearchBox label="Task" value={q.task} onChange={(v) => setQuery({ task: v, offset: undefined })} />
        <Field label="Status">
          <select value={q.status || ''} onChange={(e) => setQuery({ status: e.currentTarget.value, offset: undefined })}>
            <option value="">Any status</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </Field>
        <SearchBox label="Transaction ID" value={q.transactionId} onChange={(v) => setQuery({ transactionId: v, offset: undefined })} />
        <SearchBox label="Trace ID" value={q.traceId} onChange={(v) => setQuery({ traceId: v, offset: undefined })} />
        {!exact && (
          <div class="segmented" role="group" aria-label="Time window">
            {Object.keys(PRESETS).map((w) => (
              <button type="button" key={w} aria-pressed={!q.from && (q.window || '1h') === w} onClick={() => setQuery({ window: w, from: undefined, to: undefined, offset: undefined })}>
                {w}
              </button>
            ))}
          </div>
        )}
        <PageSize value={limit} onChange={(l) => setQuery({ limit: l === 100 ? undefined : l, offset: undefined })} />
        {filtered && (
          <button type="button" class="small" onClick={() => go(['messages'], {})}>
            Clear filters
          </button>
        )}
      </form>
      <Panel title="Messages, newest first" st={st} id="msg-list">
        {d && (
          <>
            {d.messages.length === 0 ? (
              <p class="empty">
                {filtered ? 'Nothing matches in this window.' : 'No messages in this window.'}{' '}
                {!exact && (q.window || '1h') !== '7d' && (
                  <button class="link" onClick={() => setQuery({ window: '7d', from: undefined, to: undefined })}>
                    Widen to 7 days
                  </button>
                )}{' '}
                {filtered && (
                  <button class="link" onClick={() => go(['messages'], {})}>
                    Clear filters
                  </button>
                )}
              </p>
            ) : (
              <>
                <p class="muted">Consumer mode of these queues: {d.mode && d.mode.type}</p>
                <Table
                  caption="Messages"
                  rows={d.messages}
                  resetKey={q.offset}
                  rowKey={(r) => r.partitionId + '/' + r.transactionId}
                  onOpen={(r) => go(['messages', r.partitionId, r.transactionId])}
                  cols={[
                    { key: 'createdAt', label: 'Created', render: (r) => fmtTime(r.createdAt) },
                    { key: 'queue', label: 'Queue', render: (r) => <a href={link(['queues', r.queue])}>{r.queue}</a> },
                    { key: 'partition', label: 'Partition' },
                    {
                      key: 'transactionId',
                      label: 'Transaction ID',
                      render: (r) => (
                        <span class="idcell">
                          <a href={link(['messages', r.partitionId, r.transactionId])}>{r.transactionId}</a>
                          <CopyButton text={r.transactionId} what="transaction ID" />
                        </span>
                      ),
                    },
                    { key: 'status', label: 'Status' },
                    { key: 'queueStatus', label: 'Queue mode', render: (r) => r.queueStatus || '—' },
                    { key: 'busStatus', label: 'Groups', render: (r) => (r.busStatus && r.busStatus.totalGroups ? `${r.busStatus.consumedBy}/${r.busStatus.totalGroups} groups` : '—') },
                    { key: 'leaseExpiresAt', label: 'Lease expires', render: (r) => fmtTime(r.leaseExpiresAt, true) },
                    { key: 'traceId', label: 'Trace ID', render: (r) => r.traceId || '—' },
                    { key: 'producerSub', label: 'Producer', render: (r) => r.producerSub || '—' },
                  ]}
                />
              </>
            )}
            <Pager offset={q.offset} limit={limit} count={d.messages.length} onOffset={(o) => setQuery({ offset: o || undefined })} />
          </>
        )}
      </Panel>
    </>
  );
}

const BIG = 256 * 1024;

/** JsonTree renders a payload as a collapsible tree (details/summary: keyboard for free). */
function JsonTree({ value, name }) {
  if (value === null || typeof value !== 'object') {
    const cls = value === null ? 'j-null' : typeof value === 'string' ? 'j-str' : typeof value === 'number' ? 'j-num' : 'j-bool';
    return (
      <div class="j-leaf">
        {name !== undefined && <span class="j-key">{name}: </span>}
        <span class={cls}>{JSON.stringify(value)}</span>
      </div>
    );
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  return (
    <details open class="j-node">
      <summary>
        {name !== undefined && <span class="j-key">{name}: </span>}
        {Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`}
      </summary>
      {entries.slice(0, 500).map(([k, v]) => (
        <JsonTree key={k} name={k} value={v} />
      ))}
      {entries.length > 500 && <div class="muted">… {entries.length - 500} more (see raw)</div>}
    </details>
  );
}

export function Payload({ value, filename }) {
  const raw = JSON.stringify(value, null, 2) ?? 'null';
  const [all, setAll] = useState(false);
  const [rawView, setRaw] = useState(false);
  const big = raw.length > BIG;
  return (
    <div class="payload">
      <div class="payload-tools">
        <span class="muted">{fmtBytes(new Blob([raw]).size)}</span>
        <button class="small" aria-pressed={rawView} onClick={() => setRaw(!rawView)}>
          {rawView ? 'Tree view' : 'Raw view'}
        </button>
        <CopyButton text={raw} what="payload" />
        <a class="button small" download={filename || 'payload.json'} href={'data:application/json;charset=utf-8,' + encodeURIComponent(raw.slice(0, 4 * BIG))}>
          Download
        </a>
      </div>
      {big && !all ? (
        <>
          <pre class="json">{raw.slice(0, BIG)}</pre>
          <button onClick={() => setAll(true)}>Show all ({fmtBytes(raw.length)})</button>
        </>
      ) : rawView ? (
        <pre class="json">{raw}</pre>
      ) : (
        <JsonTree value={value} />
      )}
    </div>
  );
}

export function TraceList({ traces }) {
  if (!traces || !traces.length) return <p class="empty">No trace records. Consumers add them with POST /api/v1/traces.</p>;
  return (
    <ol class="timeline">
      {traces.map((t) => (
        <li key={t.id}>
          <span class={'ev ev-' + (t.event_type || 'info')}>{t.event_type}</span> <time>{fmtTime(t.created_at)}</time>
          {t.consumer_group && (
            <>
              {' '}
              · <GroupName name={t.consumer_group} />
            </>
          )}
          {t.worker_id && <> · {t.worker_id}</>}
          {t.trace_names && t.trace_names.length > 0 && (
            <>
              {' '}
              ·{' '}
              {t.trace_names.map((n) => (
                <a key={n} href={link(['traces', n])} class="chip">
                  {n}
                </a>
              ))}
            </>
          )}
          {t.data && <pre class="json small">{JSON.stringify(t.data)}</pre>}
        </li>
      ))}
    </ol>
  );
}

export function MessageDetail({ pid, txn }) {
  const path = 'api/v1/messages/' + seg(pid) + '/' + seg(txn);
  const st = useData(get(path), ['msg', pid, txn]);
  const tr = useData(get('api/v1/traces/' + seg(pid) + '/' + seg(txn)), ['msgtr', pid, txn]);
  const [del, setDel] = useState(false);
  const [seek, setSeek] = useState(false);
  const [act, setAct] = useState(null); // 'retry' | 'dlq'
  const m = st.data;
  const curl = `curl '${location.origin}${location.pathname.replace(/[^/]*$/, '')}${path}' -H "Authorization: Bearer $QUEEN_TOKEN"`;
  return (
    <>
      <nav aria-label="Breadcrumb" class="crumbs">
        <a href="#/messages">Messages</a> / <span>{txn}</span>
      </nav>
      <h1>Message {txn}</h1>
      <Pending st={st} />
      {st.error && st.error.status === 404 ? (
        <p class="alert">
          Message <code>{txn}</code> not found (deleted, or removed by retention?). <a href="#/messages">Back to messages</a>
        </p>
      ) : (
        <Problem error={st.error} />
      )}
      {m && (
        <>
          <div class="actions">
            <CopyButton text={curl} label="Copy as curl" />
            <Gate need="read-write">
              <button onClick={() => setSeek(true)}>Replay from here…</button>
              <button onClick={() => setAct('retry')}>Retry…</button>
              <button onClick={() => setAct('dlq')}>Move to DLQ…</button>
              <button class="danger" onClick={() => setDel(true)}>
                Delete message…
              </button>
            </Gate>
          </div>
          <section class="panel" aria-labelledby="ids-h">
            <h2 id="ids-h">Identifiers and state</h2>
            <dl class="facts">
              <dt>Transaction ID</dt>
              <dd>
                <code>{m.transactionId}</code> <CopyButton text={m.transactionId} what="transaction ID" />
              </dd>
              <dt>Message ID</dt>
              <dd>
                <code>{m.id}</code>
              </dd>
              <dt>Queue / partition</dt>
              <dd>
                <a href={link(['queues', m.queue])}>{m.queue}</a> / {m.partition}
              </dd>
              <dt>Partition ID</dt>
              <dd>
                <code>{m.partitionId}</code>
              </dd>
              <dt>Status</dt>
              <dd class="msg-status">{m.status}</dd>
              <dt>Created</dt>
              <dd>{fmtTime(m.createdAt)}</dd>
              <dt>Lease expires</dt>
              <dd>{fmtTime(m.leaseExpiresAt)}</dd>
              <dt>Trace ID</dt>
              <dd>{m.traceId || '—'}</dd>
              <dt>Producer</dt>
              <dd>{m.producerSub || '—'}</dd>
              <dt>Storage</dt>
              <dd>{m.isEncrypted ? 'stored encrypted' : 'stored in clear'}</dd>
              {m.errorMessage && (
                <>
                  <dt>DLQ reason</dt>
                  <dd>
                    {m.errorMessage} (retries: {m.retryCount})
                  </dd>
                </>
              )}
              <dt>Queue config</dt>
              <dd>
                <code>{JSON.stringify(m.queueConfig)}</code>
              </dd>
            </dl>
          </section>
          <section class="panel" aria-labelledby="cg-h">
            <h2 id="cg-h">Consumer groups</h2>
            <Table
              caption="Consumption per group"
              rows={m.consumerGroups || []}
              rowKey={(r) => r.name}
              empty="No consumer reads this partition yet."
              cols={[
                { key: 'name', label: 'Group', render: (r) => <GroupName name={r.name} /> },
                { key: 'consumed', label: 'Consumed', render: (r) => (r.consumed ? 'yes' : 'no') },
                { key: 'lease', label: 'Lease expires', render: (r) => fmtTime(r.leaseExpiresAt, true) },
              ]}
            />
          </section>
          <section class="panel" aria-labelledby="pl-h">
            <h2 id="pl-h">Payload</h2>
            <Payload value={m.payload} filename={m.transactionId + '.json'} />
          </section>
          <Panel title="Trace records" st={tr} id="msg-traces">
            {tr.data && <TraceList traces={tr.data.traces} />}
          </Panel>
        </>
      )}
      {del && (
        <Confirm
          title={`Delete message ${txn}`}
          effect="Removes the message, its trace records and every group's DLQ entries for it. Its dedup key stays taken until its window ends; consumers never see it again."
          confirmLabel="Delete message"
          run={() => api(path, { method: 'DELETE' })}
          onClose={() => setDel(false)}
        />
      )}
      {seek && m && <SeekDialog queue={m.queue} timestamp={m.createdAt} onClose={() => setSeek(false)} />}
      {act && m && <MessageActionDialog kind={act} m={m} path={path} onClose={() => setAct(null)} />}
    </>
  );
}

/**
 * MessageActionDialog retries a message or moves it to the DLQ (admin-api.md §2.4, §2.5; dashboard
 * §3 "Retry" and "Move to DLQ", RW), for every consumer group of the partition or one of them, and
 * shows the broker's answer: which groups acted and which were skipped, with reasons.
 */
function MessageActionDialog({ kind, m, path, onClose }) {
  const [group, setGroup] = useState('');
  const [reason, setReason] = useState('');
  const groups = (m.consumerGroups || []).map((g) => g.name);
  const retry = kind === 'retry';
  return (
    <Confirm
      title={retry ? `Retry message ${m.transactionId}` : `Move message ${m.transactionId} to the DLQ`}
      danger={!retry}
      effect={
        retry
          ? 'A group that dead-lettered it gets it again at its next pop (its DLQ entry is requeued in redeliver mode); a group waiting out retryDelay gets it at once. Groups that have consumed it, or still have it pending, are not touched.'
          : 'Each chosen group that has not consumed it skips it from now on and gets a DLQ entry with this reason. A leased or already consumed message is skipped for that group; other messages stay where they are.'
      }
      confirmLabel={retry ? 'Retry' : 'Move to DLQ'}
      run={() => {
        const body = {};
        if (group) body.consumerGroup = group;
        if (!retry && reason.trim()) body.error = reason.trim();
        return api(path + (retry ? '/retry' : '/dlq'), { method: 'POST', body });
      }}
      onClose={onClose}
    >
      <Field label="Consumer group">
        <select value={group} onChange={(e) => setGroup(e.currentTarget.value)}>
          <option value="">{retry ? 'Every group with a DLQ entry or a pending retry' : 'Every group of the partition'}</option>
          {groups.map((g) => (
            <option key={g} value={g}>
              {g === '__QUEUE_MODE__' ? 'queue mode (__QUEUE_MODE__)' : g}
            </option>
          ))}
        </select>
      </Field>
      {!retry && <Field label="Reason recorded (optional)" value={reason} onInput={setReason} placeholder="Moved to DLQ manually" maxLength={4096} />}
    </Confirm>
  );
}

// ---- Dead letters ----

export function DeadLetters({ q }) {
  const limit = pageLimit(q.limit);
  const query = { queue: q.queue, consumerGroup: q.group, partition: q.partition, error: q.error, from: q.from, to: q.to, limit, offset: q.offset };
  const st = useData(get('api/v1/dlq', query), ['dlq', query]);
  const status = useData(get('api/v1/status'), ['dlqstatus']);
  const sel = useSelection();
  const [dlg, setDlg] = useState(null);
  const [open, setOpen] = useState(null);
  const d = st.data;
  const top = (status.data && status.data.deadLetterQueue && status.data.deadLetterQueue.topErrors) || [];
  const filter = {};
  if (q.queue) filter.queue = q.queue;
  if (q.group) filter.consumerGroup = q.group;
  if (q.partition) filter.partition = q.partition;
  if (q.error) filter.error = q.error;
  if (q.from) filter.from = q.from;
  if (q.to) filter.to = q.to;
  const filtered = Object.keys(filter).length > 0;
  useEffect(() => sel.clear(), [JSON.stringify(query)]);
  return (
    <>
      <h1>Dead letters</h1>
      <div class="cols">
        <Panel title="Top reasons" st={status} id="dlq-reasons">
          <Bars title="Top DLQ reasons" items={top.map((t) => ({ label: t.error, value: t.count, onClick: () => setQuery({ error: t.error, offset: undefined }) }))} />
        </Panel>
      </div>
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <SearchBox label="Queue" value={q.queue} onChange={(v) => setQuery({ queue: v, offset: undefined })} />
        <SearchBox label="Consumer group" value={q.group} onChange={(v) => setQuery({ group: v, offset: undefined })} />
        <SearchBox label="Partition" value={q.partition} onChange={(v) => setQuery({ partition: v, offset: undefined })} />
        <SearchBox label="Reason (exact)" value={q.error} onChange={(v) => setQuery({ error: v, offset: undefined })} />
        <PageSize value={limit} onChange={(l) => setQuery({ limit: l === 100 ? undefined : l, offset: undefined })} />
        {filtered && (
          <button type="button" class="small" onClick={() => go(['dlq'], {})}>
            Clear filters
          </button>
        )}
      </form>
      <Panel title={d ? `${fmtNum(d.total)} matching entries` : 'Entries'} st={st} id="dlq-list">
        {d && (
          <>
            <Gate need="read-write">
              <div class="actions" role="group" aria-label="Actions on entries">
                <span>{sel.size ? `${sel.size} selected` : 'Select rows, or act on all matching'}</span>
                <button disabled={!sel.size} onClick={() => setDlg({ kind: 'requeue', ids: sel.ids() })}>
                  Requeue selected…
                </button>
                <button disabled={!sel.size} onClick={() => setDlg({ kind: 'delete', ids: sel.ids() })}>
                  Delete selected entries…
                </button>
                <button disabled={!d.total} onClick={() => setDlg({ kind: 'requeue', filter })}>
                  Requeue all {fmtNum(d.total)} matching…
                </button>
                <button disabled={!d.total} onClick={() => setDlg({ kind: 'delete', filter })}>
                  Delete all {fmtNum(d.total)} matching…
                </button>
              </div>
            </Gate>
            <DLQTable rows={d.messages} sel={useCan('read-write') ? sel : null} onOpen={setOpen} filtered={filtered} />
            <Pager offset={q.offset} limit={limit} count={d.messages.length} total={d.total} onOffset={(o) => setQuery({ offset: o || undefined })} />
          </>
        )}
      </Panel>
      {open && <DLQDrawer e={open} onClose={() => setOpen(null)} />}
      {dlg && dlg.kind === 'requeue' && <RequeueDialog sel={dlg} total={d && d.total} onClose={() => (setDlg(null), sel.clear())} />}
      {dlg && dlg.kind === 'delete' && (
        <Confirm
          title={dlg.ids ? `Delete ${dlg.ids.length} DLQ entries` : `Delete up to 1,000 matching DLQ entries`}
          effect="Removes the entries only. The messages, if still stored, stay (a message skipped for a group stays skipped). The payload copies go with the entries."
          confirmLabel="Delete entries"
          run={() => api('api/v1/dlq/delete', { method: 'POST', body: dlg.ids ? { ids: dlg.ids } : { filter: dlg.filter, limit: 1000 } })}
          onClose={() => (setDlg(null), sel.clear())}
        />
      )}
    </>
  );
}

function DLQTable({ rows, sel, onOpen, filtered }) {
  return (
    <Table
      caption="Dead-letter entries"
      rows={rows}
      rowKey={(r) => r.dlqId || r.id + '/' + r.consumerGroup}
      select={sel}
      onOpen={onOpen}
      empty={filtered ? 'Nothing matches. Clear filters to see every entry.' : 'No dead letters. Messages land here when a group gives up on them.'}
      cols={[
        { key: 'failedAt', label: 'Failed', render: (r) => fmtTime(r.failedAt, true) },
        { key: 'queue', label: 'Queue', render: (r) => <a href={link(['queues', r.queue])}>{r.queue}</a> },
        { key: 'partition', label: 'Partition' },
        {
          key: 'transactionId',
          label: 'Message',
          render: (r) => (r.messageStored !== false ? <a href={link(['messages', r.partitionId, r.transactionId])}>{r.transactionId}</a> : <span title="no longer stored">{r.transactionId} (gone)</span>),
        },
        { key: 'consumerGroup', label: 'Group', render: (r) => <GroupName name={r.consumerGroup} /> },
        { key: 'errorMessage', label: 'Reason', render: (r) => <button class="link" onClick={() => setQuery({ error: r.errorMessage })}>{r.errorMessage || '—'}</button> },
        { key: 'retryCount', label: 'Retries', num: true },
        { key: 'createdAt', label: 'Message created', render: (r) => fmtTime(r.createdAt, true) },
        { key: 'open', label: 'Entry', render: (r) => <button class="small" onClick={() => onOpen(r)} aria-label={'Open entry ' + r.transactionId}>Open</button> },
      ]}
    />
  );
}

function DLQDrawer({ e, onClose }) {
  const [del, setDel] = useState(false);
  return (
    <Dialog title={`DLQ entry ${e.transactionId}`} onClose={onClose} wide>
      <dl class="facts">
        <dt>Entry ID</dt>
        <dd>
          <code>{e.dlqId || '—'}</code>
        </dd>
        <dt>Message</dt>
        <dd>
          {e.messageStored !== false ? <a href={link(['messages', e.partitionId, e.transactionId])} onClick={onClose}>{e.transactionId}</a> : <>{e.transactionId} (no longer stored)</>}
        </dd>
        <dt>Queue / partition / group</dt>
        <dd>
          {e.queue} / {e.partition} / <GroupName name={e.consumerGroup} />
        </dd>
        <dt>Reason</dt>
        <dd>{e.errorMessage}</dd>
        <dt>Retries</dt>
        <dd>{e.retryCount}</dd>
        <dt>Failed</dt>
        <dd>{fmtTime(e.failedAt)}</dd>
      </dl>
      <h3>Payload copy</h3>
      <Payload value={e.data} />
      <div class="dlg-actions">
        <Gate need="read-write">
          {e.dlqId && (
            <button class="danger" onClick={() => setDel(true)}>
              Delete entry…
            </button>
          )}
        </Gate>
        <button onClick={onClose}>Close</button>
      </div>
      {del && (
        <Confirm
          title="Delete this DLQ entry"
          effect="Removes this entry only; the message (if stored) stays, and stays skipped for this group."
          confirmLabel="Delete entry"
          run={() => api('api/v1/dlq/' + seg(e.dlqId), { method: 'DELETE' })}
          onClose={() => (setDel(false), onClose())}
        />
      )}
    </Dialog>
  );
}

function RequeueDialog({ sel, total, onClose }) {
  const [mode, setMode] = useState('redeliver');
  const [toQueue, setToQueue] = useState('');
  const [toPartition, setToPartition] = useState('');
  const count = sel.ids ? sel.ids.length : Math.min(total || 0, 1000);
  const body = () => {
    const b = sel.ids ? { ids: sel.ids } : { filter: sel.filter, limit: 1000 };
    b.mode = mode;
    if (mode === 'copy') {
      b.toQueue = toQueue;
      if (toPartition) b.toPartition = toPartition;
    }
    return b;
  };
  return (
    <Confirm
      title={`Requeue ${fmtNum(count)} entries`}
      danger={false}
      effect={
        mode === 'redeliver'
          ? 'Redeliver to the failing group: each message goes back to the group that gave up on it, at its next claim of the partition. No other group sees it again. The entries are removed.'
          : 'Copy to a queue: a new message built from each entry’s payload copy, which every group of the target queue sees. The entries are removed.'
      }
      confirmLabel="Requeue"
      run={() => {
        if (mode === 'copy' && !toQueue) throw Object.assign(new Error('toQueue is required for mode copy'), { status: 400 });
        return api('api/v1/dlq/requeue', { method: 'POST', body: body() });
      }}
      onClose={onClose}
    >
      <fieldset>
        <legend>Mode</legend>
        <label class="check">
          <input type="radio" name="mode" checked={mode === 'redeliver'} onChange={() => setMode('redeliver')} /> Redeliver to the failing group
        </label>
        <label class="check">
          <input type="radio" name="mode" checked={mode === 'copy'} onChange={() => setMode('copy')} /> Copy to a queue
        </label>
      </fieldset>
      {mode === 'copy' && (
        <>
          <Field label="Target queue" value={toQueue} onInput={setToQueue} required />
          <Field label="Target partition (empty: the entry's own)" value={toPartition} onInput={setToPartition} />
        </>
      )}
    </Confirm>
  );
}

// ---- Consumer groups ----

export function Groups({ q }) {
  const lagging = q.minLag !== undefined && q.minLag !== '';
  const query = { search: q.q, queue: q.queue, state: q.state, limit: 1000 };
  const st = useData(get('api/v1/consumer-groups', query), ['groups', query]);
  const lag = useData(lagging ? get('api/v1/consumer-groups/lagging', { minLagSeconds: q.minLag, queue: q.queue, limit: 200 }) : async () => null, ['glag', q.minLag, q.queue]);
  return (
    <>
      <h1>Consumer groups</h1>
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <SearchBox label="Search group names" value={q.q} onChange={(v) => setQuery({ q: v })} />
        <SearchBox label="Queue" value={q.queue} onChange={(v) => setQuery({ queue: v })} />
        <Field label="State">
          <select value={q.state || ''} onChange={(e) => setQuery({ state: e.currentTarget.value })}>
            <option value="">Any state</option>
            {['Stable', 'Lagging', 'Dead'].map((s) => (
              <option key={s}>{s}</option>
            ))}
          </select>
        </Field>
        <Field label="Lagging only, at least (s)" type="number" value={q.minLag} onInput={(v) => setQuery({ minLag: v })} min="0" />
      </form>
      {lagging ? (
        <Panel title={`Pairs lagging ≥ ${q.minLag} s`} st={lag} id="group-lagging">
          {lag.data && (
            <Table
              caption="Lagging partitions"
              rows={lag.data}
              rowKey={(r) => r.consumer_group + r.partition_id}
              onOpen={(r) => go(['groups', r.consumer_group], { queue: r.queue_name })}
              cols={[
                { key: 'g', label: 'Group', render: (r) => <a href={link(['groups', r.consumer_group], { queue: r.queue_name })}><GroupName name={r.consumer_group} /></a> },
                { key: 'q', label: 'Queue', render: (r) => r.queue_name },
                { key: 'p', label: 'Partition', render: (r) => r.partition_name },
                { key: 't', label: 'Time lag', num: true, render: (r) => fmtDur(r.time_lag_seconds) },
                { key: 'o', label: 'Offset lag', num: true, render: (r) => fmtNum(r.offset_lag) },
              ]}
              empty="Nothing lags that much."
            />
          )}
        </Panel>
      ) : (
        <Panel title="Groups per queue" st={st} id="group-list">
          {st.data && <GroupTable rows={st.data} />}
        </Panel>
      )}
    </>
  );
}

export function GroupDetail({ name, q }) {
  const st = useData(get('api/v1/consumer-groups/' + seg(name), { queue: q.queue }), ['group', name, q.queue]);
  const [dlg, setDlg] = useState(q.seekPartition && q.queue ? { kind: 'part', queue: q.queue, partition: q.seekPartition } : null);
  const d = st.data;
  const queues = d ? Object.keys(d) : [];
  return (
    <>
      <nav aria-label="Breadcrumb" class="crumbs">
        <a href="#/groups">Consumer groups</a> / <span>{name}</span>
      </nav>
      <h1>
        Consumer group <GroupName name={name} />
      </h1>
      <Pending st={st} />
      {st.error && st.error.status === 404 ? (
        <p class="alert">
          Consumer group <code>{name}</code> not found: a group appears after its first pop. <a href="#/groups">Back to groups</a>
        </p>
      ) : (
        <Problem error={st.error} />
      )}
      <div class="actions">
        <Gate need="read-write">
          {name !== '__QUEUE_MODE__' && <button onClick={() => setDlg({ kind: 'sub' })}>Rewrite subscription…</button>}
        </Gate>
        <Gate need="admin">
          <button class="danger" onClick={() => setDlg({ kind: 'delete' })}>
            Delete group everywhere…
          </button>
        </Gate>
      </div>
      {q.queue && (
        <p>
          Showing queue <code>{q.queue}</code>. <a href={link(['groups', name])}>Show every queue</a>
        </p>
      )}
      {queues.map((qn) => (
        <section class="panel" key={qn} aria-labelledby={'gq-' + qn}>
          <div class="panel-head">
            <h2 id={'gq-' + qn}>
              Queue <a href={link(['queues', qn])}>{qn}</a>
            </h2>
            <Gate need="read-write">
              <button onClick={() => setDlg({ kind: 'seek', queue: qn })}>Seek queue…</button>
            </Gate>
            <Gate need="admin">
              <button class="danger" onClick={() => setDlg({ kind: 'delete', queue: qn })}>
                Delete on this queue…
              </button>
            </Gate>
          </div>
          <Table
            caption={'Partitions of ' + qn}
            rows={d[qn].partitions}
            rowKey={(r) => r.partition}
            cols={[
              { key: 'partition', label: 'Partition' },
              { key: 'offsetLag', label: 'Offset lag', num: true, render: (r) => <span class="offset-lag">{fmtNum(r.offsetLag)}</span> },
              { key: 'timeLagSeconds', label: 'Time lag', num: true, render: (r) => fmtDur(r.timeLagSeconds) },
              { key: 'lastConsumedAt', label: 'Last consumed', render: (r) => fmtTime(r.lastConsumedAt, true) },
              { key: 'totalConsumed', label: 'Consumed', num: true },
              { key: 'lease', label: 'Lease', render: (r) => (r.leaseActive ? 'held by ' + (r.workerId || '?') : '—') },
              {
                key: 'seek',
                label: 'Seek',
                render: (r) => (
                  <Gate need="read-write">
                    <button class="small" aria-label={`Seek partition ${r.partition} to end`} onClick={() => setDlg({ kind: 'part', queue: qn, partition: r.partition })}>
                      To end…
                    </button>
                  </Gate>
                ),
              },
            ]}
          />
        </section>
      ))}
      {dlg && dlg.kind === 'seek' && <SeekDialog group={name} queue={dlg.queue} onClose={() => setDlg(null)} />}
      {dlg && dlg.kind === 'part' && (
        <Confirm
          title={`Seek ${dlg.partition} to its end`}
          danger={false}
          effect={`Moves ${name}'s cursor on ${dlg.queue}/${dlg.partition} after the last stored message: the messages before it are skipped. The lease is cleared; a consumer holding it gets “Invalid or expired lease”.`}
          confirmLabel="Seek to end"
          run={() => api(`api/v1/consumer-groups/${seg(name)}/queues/${seg(dlg.queue)}/partitions/${seg(dlg.partition)}/seek`, { method: 'POST', body: {} })}
          onClose={() => setDlg(null)}
        />
      )}
      {dlg && dlg.kind === 'sub' && <SubscriptionDialog group={name} onClose={() => setDlg(null)} />}
      {dlg && dlg.kind === 'delete' && <DeleteGroup group={name} queue={dlg.queue} onClose={() => setDlg(null)} />}
    </>
  );
}

function DeleteGroup({ group, queue, onClose }) {
  const [meta, setMeta] = useState(true);
  const path = 'api/v1/consumer-groups/' + seg(group) + (queue ? '/queues/' + seg(queue) : '') + qs({ deleteMetadata: String(meta) });
  return (
    <Confirm
      title={queue ? `Delete ${group} on ${queue}` : `Delete ${group} everywhere`}
      effect="Removes the group's cursors and leases; consumers holding a lease get “Invalid or expired lease”. DLQ entries stay."
      confirmLabel="Delete group"
      run={() => api(path, { method: 'DELETE' })}
      onClose={onClose}
    >
      <label class="check">
        <input type="checkbox" checked={meta} onChange={(e) => setMeta(e.currentTarget.checked)} /> Also delete its subscription (deleteMetadata)
      </label>
    </Confirm>
  );
}

/** SeekDialog moves a group's cursor on a queue to its end or to a timestamp (§2.6). */
export function SeekDialog({ group: g0, queue, timestamp, onClose }) {
  const [group, setGroup] = useState(g0 || '');
  const [toEnd, setToEnd] = useState(!timestamp);
  const [ts, setTs] = useState(toTimeInput(timestamp));
  const exact = timestamp && ts === toTimeInput(timestamp) ? timestamp : null;
  return (
    <Confirm
      title={`Seek ${group || 'a group'} on ${queue}`}
      danger={false}
      effect="Moves the cursor on every partition of the queue. It may move backwards: messages are then delivered again; forwards, they are skipped. Leases are cleared (holders get “Invalid or expired lease”), retry counters reset."
      confirmLabel="Seek"
      run={() => {
        if (!group) throw Object.assign(new Error('Choose a consumer group'), { status: 400 });
        const body = toEnd ? { toEnd: true } : { timestamp: exact || fromTimeInput(ts) };
        return api(`api/v1/consumer-groups/${seg(group)}/queues/${seg(queue)}/seek`, { method: 'POST', body });
      }}
      onClose={onClose}
    >
      {!g0 && <Field label="Consumer group" value={group} onInput={setGroup} placeholder="__QUEUE_MODE__ for queue mode" />}
      <fieldset>
        <legend>Target</legend>
        <label class="check">
          <input type="radio" name="seek" checked={toEnd} onChange={() => setToEnd(true)} /> To the end
        </label>
        <label class="check">
          <input type="radio" name="seek" checked={!toEnd} onChange={() => setToEnd(false)} /> To a time
        </label>
      </fieldset>
      {!toEnd && (
        <>
          <Field label={`Deliver messages created at or after (${zoneName()})`} type="datetime-local" step="1" value={ts} onInput={setTs} />
          <div class="segmented" role="group" aria-label="Presets">
            {[
              ['1 h ago', 3600e3],
              ['24 h ago', 86400e3],
              ['7 d ago', 7 * 86400e3],
            ].map(([l, ms]) => (
              <button type="button" key={l} onClick={() => setTs(toTimeInput(Date.now() - ms))}>
                {l}
              </button>
            ))}
          </div>
        </>
      )}
    </Confirm>
  );
}

function SubscriptionDialog({ group, onClose }) {
  const [ts, setTs] = useState(toTimeInput());
  return (
    <Confirm
      title={`Rewrite ${group}'s subscription`}
      danger={false}
      effect="Sets the recorded subscription timestamp on every queue (mode becomes timestamp). It applies only to partitions where the group has no cursor yet."
      confirmLabel="Rewrite"
      run={() => api(`api/v1/consumer-groups/${seg(group)}/subscription`, { method: 'POST', body: { subscriptionTimestamp: fromTimeInput(ts) } })}
      onClose={onClose}
    >
      <Field label={`Subscription timestamp (${zoneName()})`} type="datetime-local" step="1" value={ts} onInput={setTs} />
    </Confirm>
  );
}

// ---- Traces ----

export function Traces({ q }) {
  const limit = 50;
  const st = useData(get('api/v1/traces/names', { search: q.q, limit, offset: q.offset }), ['tnames', q.q, q.offset]);
  const d = st.data;
  return (
    <>
      <h1>Traces</h1>
      <div class="filters" role="search">
        <SearchBox label="Search trace names" value={q.q} onChange={(v) => setQuery({ q: v, offset: undefined })} />
      </div>
      <Panel title="Trace names, most recent first" st={st} id="tnames">
        {d && (
          <>
            <Table
              caption="Trace names"
              rows={d.trace_names}
              rowKey={(r) => r.trace_name}
              onOpen={(r) => go(['traces', r.trace_name])}
              empty={
                q.q ? (
                  'Nothing matches.'
                ) : (
                  <>
                    No trace names yet. A consumer records events with <code>POST /api/v1/traces</code> and a <code>traceNames</code> list.
                  </>
                )
              }
              cols={[
                { key: 'trace_name', label: 'Name', render: (r) => <a href={link(['traces', r.trace_name])}>{r.trace_name}</a> },
                { key: 'trace_count', label: 'Events', num: true },
                { key: 'message_count', label: 'Messages', num: true },
                { key: 'last_seen', label: 'Last seen', render: (r) => fmtTime(r.last_seen, true) },
              ]}
            />
            <Pager offset={q.offset} limit={limit} count={d.trace_names.length} total={d.total} onOffset={(o) => setQuery({ offset: o || undefined })} />
          </>
        )}
      </Panel>
    </>
  );
}

export function TraceTimeline({ name, q }) {
  const limit = 500;
  const st = useData(get('api/v1/traces/by-name/' + seg(name), { limit, offset: q.offset }), ['tline', name, q.offset]);
  const [focus, setFocus] = useState(null);
  const [open, setOpen] = useState(null);
  const view = q.view || 'timeline';
  const d = st.data;
  const ev = (d && d.traces) || [];
  return (
    <>
      <nav aria-label="Breadcrumb" class="crumbs">
        <a href="#/traces">Traces</a> / <span>{name}</span>
      </nav>
      <h1>Trace {name}</h1>
      <div class="segmented" role="group" aria-label="View">
        {['timeline', 'table'].map((v) => (
          <button key={v} aria-pressed={view === v} onClick={() => setQuery({ view: v })}>
            {v === 'timeline' ? 'Timeline' : 'Table'}
          </button>
        ))}
      </div>
      <Panel title={d ? `${fmtNum(d.total)} events` : 'Events'} st={st} id="tline">
        {d && view === 'timeline' && <Timeline events={ev} focus={focus} setFocus={setFocus} onOpen={setOpen} />}
        {d && view === 'table' && (
          <Table
            caption="Trace events"
            rows={ev}
            rowKey={(r) => r.id}
            onOpen={setOpen}
            cols={[
              { key: 'created_at', label: 'Time', render: (r) => fmtTime(r.created_at) },
              { key: 'event_type', label: 'Event' },
              { key: 'qp', label: 'Queue / partition', render: (r) => `${r.queue_name} / ${r.partition_name}` },
              { key: 'consumer_group', label: 'Group', render: (r) => (r.consumer_group ? <GroupName name={r.consumer_group} /> : '—') },
              { key: 'worker_id', label: 'Worker', render: (r) => r.worker_id || '—' },
              { key: 'data', label: 'Data', render: (r) => <code class="clip">{JSON.stringify(r.data)}</code> },
            ]}
          />
        )}
        {d && <Pager offset={q.offset} limit={limit} count={ev.length} total={d.total} onOffset={(o) => setQuery({ offset: o || undefined })} />}
      </Panel>
      {open && (
        <Dialog title={`${open.event_type} on ${open.queue_name}/${open.partition_name}`} onClose={() => setOpen(null)} wide>
          <p>
            {fmtTime(open.created_at)} · <a href={link(['messages', open.partition_id, open.transaction_id])}>message {open.transaction_id}</a>
          </p>
          <h3>Event data</h3>
          <Payload value={open.data} />
          <h3>Message payload</h3>
          {open.message_payload === null ? <p class="muted">The message is gone.</p> : <Payload value={open.message_payload} />}
        </Dialog>
      )}
    </>
  );
}

const EVENT_SHAPES = ['circle', 'square', 'triangle', 'diamond'];

function Timeline({ events, focus, setFocus, onOpen }) {
  if (!events.length) return <p class="empty">No events on this page.</p>;
  const lanes = [...new Set(events.map((e) => e.queue_name))].sort();
  const types = [...new Set(events.map((e) => e.event_type))].sort();
  const t = events.map((e) => +new Date(e.created_at));
  const t0 = Math.min(...t);
  const t1 = Math.max(...t, t0 + 1);
  const W = 900;
  const laneH = 36;
  const L = 140;
  const H = lanes.length * laneH + 30;
  // Marks start PAD right of the lane line's start, so the first one never touches its label.
  const PAD = 14;
  const x = (ms) => L + PAD + ((ms - t0) / (t1 - t0)) * (W - L - PAD - 20);
  const y = (lane) => 15 + lanes.indexOf(lane) * laneH + laneH / 2;
  const byMsg = {};
  for (const e of events) (byMsg[e.partition_id + '/' + e.transaction_id] ||= []).push(e);
  return (
    <>
      <ul class="legend">
        {types.map((ty, i) => (
          <li key={ty} class={'s' + (i % 6)}>
            <svg width="12" height="12" aria-hidden="true">
              <Shape kind={EVENT_SHAPES[i % 4]} x={6} y={6} />
            </svg>
            {ty}
          </li>
        ))}
      </ul>
      <div class="table-wrap">
        <svg viewBox={`0 0 ${W} ${H}`} class="timeline-svg" role="group" aria-label="Trace events per queue over time">
          {lanes.map((l) => (
            <g key={l}>
              <line x1={L} x2={W - 10} y1={y(l)} y2={y(l)} class="grid" />
              <text x={L - 6} y={y(l) + 4} text-anchor="end" class="axis">
                {l.length > 20 ? l.slice(0, 19) + '…' : l}
              </text>
            </g>
          ))}
          {Object.entries(byMsg).map(([k, es]) =>
            es.length > 1 ? (
              <polyline
                key={k}
                class={'path' + (focus === k ? ' focused' : '')}
                points={es.map((e) => `${x(+new Date(e.created_at))},${y(e.queue_name)}`).join(' ')}
              />
            ) : null,
          )}
          {events.map((e) => {
            const k = e.partition_id + '/' + e.transaction_id;
            const i = types.indexOf(e.event_type);
            return (
              <g
                key={e.id}
                class={'ev-mark s' + (i % 6) + (focus && focus !== k ? ' dim' : '')}
                tabIndex={0}
                role="button"
                aria-label={`${e.event_type} on ${e.queue_name}/${e.partition_name} at ${fmtTime(e.created_at)}`}
                onFocus={() => setFocus(k)}
                onMouseEnter={() => setFocus(k)}
                onClick={() => onOpen(e)}
                onKeyDown={(ev) => (ev.key === 'Enter' || ev.key === ' ') && (ev.preventDefault(), onOpen(e))}
              >
                <Shape kind={EVENT_SHAPES[i % 4]} x={x(+new Date(e.created_at))} y={y(e.queue_name)} />
              </g>
            );
          })}
          <text x={L} y={H - 4} class="axis">
            {fmtTime(t0)}
          </text>
          <text x={W - 10} y={H - 4} class="axis" text-anchor="end">
            {fmtTime(t1)}
          </text>
        </svg>
      </div>
    </>
  );
}

function Shape({ kind, x, y }) {
  if (kind === 'square') return <rect x={x - 5} y={y - 5} width="10" height="10" class="mark" />;
  if (kind === 'triangle') return <path d={`M${x},${y - 6}L${x + 6},${y + 5}L${x - 6},${y + 5}Z`} class="mark" />;
  if (kind === 'diamond') return <path d={`M${x},${y - 6}L${x + 6},${y}L${x},${y + 6}L${x - 6},${y}Z`} class="mark" />;
  return <circle cx={x} cy={y} r="5" class="mark" />;
}
