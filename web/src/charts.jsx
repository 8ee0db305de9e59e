// Hand-made SVG charts (docs/api/dashboard.md §4.4): legend, axis units, exact values on hover or
// focus, a crosshair shared across the page, "View as table" and "Copy CSV". Series differ by dash
// and marker as well as colour.
import { useEffect, useState, useRef } from 'preact/hooks';
import { emit, on } from './api.js';
import { fmtNum, fmtTime, CopyButton, setQuery } from './lib.jsx';

const DASH = ['', '6 3', '2 3', '8 3 2 3', '1 2', '10 4'];
const MARK = ['circle', 'square', 'triangle', 'diamond', 'circle', 'square'];

function Marker({ kind, x, y, cls }) {
  if (kind === 'square') return <rect x={x - 3} y={y - 3} width="6" height="6" class={cls} />;
  if (kind === 'triangle') return <path d={`M${x},${y - 4}L${x + 4},${y + 3}L${x - 4},${y + 3}Z`} class={cls} />;
  if (kind === 'diamond') return <path d={`M${x},${y - 4}L${x + 4},${y}L${x},${y + 4}L${x - 4},${y}Z`} class={cls} />;
  return <circle cx={x} cy={y} r="3" class={cls} />;
}

function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

/**
 * LineChart draws series [{name, points:[[ms, value]]}] over [from, to]. gauge: a missing bucket is
 * a gap; otherwise (rates) it is 0 (§4.4), given bucketMs.
 */
export function LineChart({ title, series, unit, from, to, bucketMs, gauge, height = 180 }) {
  const [asTable, setAsTable] = useState(false);
  const [hover, setHover] = useState(null);
  const [drag, setDrag] = useState(null); // [startPx, currentPx] of a drag-zoom, in viewBox units
  const svg = useRef(null);
  useEffect(() => on('crosshair', setHover), []);
  const W = 640;
  const H = height;
  const L = 48;
  const R = 8;
  const T = 8;
  const B = 22;
  const t0 = +new Date(from);
  const t1 = +new Date(to);
  const filled = series.map((s) => ({ ...s, points: gauge || !bucketMs ? s.points : fill(s.points, t0, t1, bucketMs) }));
  const empty = series.every((s) => s.points.every((p) => !p[1]));
  let max = 0;
  for (const s of filled) for (const p of s.points) if (p[1] > max) max = p[1];
  max = niceMax(max);
  const x = (t) => L + ((t - t0) / Math.max(1, t1 - t0)) * (W - L - R);
  const y = (v) => T + (1 - v / max) * (H - T - B);
  const times = [...new Set(filled.flatMap((s) => s.points.map((p) => p[0])))].sort((a, b) => a - b);
  const csv = () =>
    ['time,' + filled.map((s) => JSON.stringify(s.name)).join(',')]
      .concat(times.map((t) => new Date(t).toISOString() + ',' + filled.map((s) => (s.points.find((p) => p[0] === t) || [0, ''])[1]).join(',')))
      .join('\n');
  const toPx = (e) => {
    const r = svg.current.getBoundingClientRect();
    return Math.min(W - R, Math.max(L, ((e.clientX - r.left) / r.width) * W));
  };
  const toT = (px) => t0 + ((px - L) / (W - L - R)) * (t1 - t0);
  // Drag-zoom writes the window into the URL (§4.4), so it is a deep link like any other.
  const down = (e) => setDrag([toPx(e), toPx(e)]);
  const up = (e) => {
    if (!drag) return;
    const a = Math.min(drag[0], toPx(e));
    const b = Math.max(drag[0], toPx(e));
    setDrag(null);
    if (b - a > 8) setQuery({ from: new Date(toT(a)).toISOString(), to: new Date(toT(b)).toISOString(), window: undefined });
  };
  const move = (e) => {
    if (drag) setDrag([drag[0], toPx(e)]);
    const r = svg.current.getBoundingClientRect();
    const px = ((e.clientX - r.left) / r.width) * W;
    const t = t0 + ((px - L) / (W - L - R)) * (t1 - t0);
    let best = null;
    for (const tt of times) if (best === null || Math.abs(tt - t) < Math.abs(best - t)) best = tt;
    emit('crosshair', best);
  };
  const hv = hover !== null && times.includes(hover) ? hover : null;
  return (
    <figure class="chart">
      <figcaption>
        <span class="chart-title">{title}</span>
        <span class="chart-unit">({unit})</span>
        <span class="chart-tools">
          <button class="small" aria-pressed={asTable} onClick={() => setAsTable(!asTable)}>
            {asTable ? 'View as chart' : 'View as table'}
          </button>
          <CopyButton text={csv} label="Copy CSV" what={title} />
        </span>
      </figcaption>
      {empty ? (
        <p class="empty">
          No traffic between {fmtTime(from, true)} and {fmtTime(to, true)}.
        </p>
      ) : asTable ? (
        <div class="table-wrap chart-table">
          <table>
            <caption class="sr-only">{title}</caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                {filled.map((s) => (
                  <th scope="col" class="num" key={s.name}>
                    {s.name}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {times.slice(-200).map((t) => (
                <tr key={t}>
                  <td>{fmtTime(t, true)}</td>
                  {filled.map((s) => (
                    <td class="num" key={s.name}>
                      {fmtNum((s.points.find((p) => p[0] === t) || [0, null])[1], 3)}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <>
          <svg
            ref={svg}
            viewBox={`0 0 ${W} ${H}`}
            role="img"
            aria-label={`${title}, ${unit}; ${filled.map((s) => s.name).join(', ')}`}
            onMouseMove={move}
            onMouseDown={down}
            onMouseUp={up}
            onMouseLeave={() => (emit('crosshair', null), setDrag(null))}
            class="chart-svg"
          >
            {[0, 0.5, 1].map((f) => (
              <g key={f}>
                <line x1={L} x2={W - R} y1={y(max * f)} y2={y(max * f)} class="grid" />
                <text x={L - 4} y={y(max * f) + 4} class="axis" text-anchor="end">
                  {fmtNum(max * f, 2)}
                </text>
              </g>
            ))}
            <text x={L} y={H - 6} class="axis">
              {fmtTime(t0, true).slice(11, 16)}
            </text>
            <text x={W - R} y={H - 6} class="axis" text-anchor="end">
              {fmtTime(t1, true).slice(11, 16)}
            </text>
            {filled.map((s, i) => (
              <g key={s.name} class={'s' + (i % 6)}>
                {segments(s.points, gauge ? bucketMs : 0).map((pts, j) => (
                  <polyline key={j} points={pts.map((p) => `${x(p[0])},${y(p[1])}`).join(' ')} class="line" stroke-dasharray={DASH[i % 6]} />
                ))}
                {s.points.length <= 60 && s.points.map((p) => <Marker key={p[0]} kind={MARK[i % 6]} x={x(p[0])} y={y(p[1])} cls="mark" />)}
              </g>
            ))}
            {hv !== null && <line x1={x(hv)} x2={x(hv)} y1={T} y2={H - B} class="crosshair" />}
            {drag && <rect x={Math.min(drag[0], drag[1])} y={T} width={Math.abs(drag[1] - drag[0])} height={H - T - B} class="zoom" />}
          </svg>
          <div class="tooltip" aria-live="off">
            {hv !== null ? (
              <>
                <strong>{fmtTime(hv, true)}</strong>{' '}
                {filled.map((s, i) => (
                  <span key={s.name} class={'s' + (i % 6)}>
                    {s.name}: {fmtNum((s.points.find((p) => p[0] === hv) || [0, null])[1], 3)}{' '}
                  </span>
                ))}
              </>
            ) : (
              <span class="muted">Hover for exact values, or view as table.</span>
            )}
          </div>
        </>
      )}
      <ul class="legend">
        {filled.map((s, i) => (
          <li key={s.name} class={'s' + (i % 6)}>
            <svg width="28" height="10" aria-hidden="true">
              <line x1="0" x2="28" y1="5" y2="5" class="line" stroke-dasharray={DASH[i % 6]} />
              <Marker kind={MARK[i % 6]} x={14} y={5} cls="mark" />
            </svg>
            {s.name}
          </li>
        ))}
      </ul>
    </figure>
  );
}

function fill(points, t0, t1, step) {
  const m = new Map(points.map((p) => [p[0], p[1]]));
  const out = [];
  const start = Math.floor(t0 / step) * step;
  if ((t1 - start) / step > 1500) return points;
  for (let t = start; t <= t1; t += step) out.push([t, m.get(t) || 0]);
  for (const p of points) if (!out.some((o) => o[0] === p[0])) out.push(p);
  return out.sort((a, b) => a[0] - b[0]);
}
function segments(points, step) {
  if (!step) return [points];
  const out = [];
  let cur = [];
  for (const p of points) {
    if (cur.length && p[0] - cur[cur.length - 1][0] > step * 1.5) {
      out.push(cur);
      cur = [];
    }
    cur.push(p);
  }
  if (cur.length) out.push(cur);
  return out;
}

/** Bars draws horizontal bars [{label, value, onClick?}] (DLQ reasons, top queues). */
export function Bars({ items, title }) {
  if (!items || !items.length) return <p class="empty">None.</p>;
  const max = Math.max(...items.map((i) => i.value), 1);
  return (
    <ul class="bars" aria-label={title}>
      {items.map((i) => (
        <li key={i.label}>
          {i.onClick ? (
            <button class="link bar-label" onClick={i.onClick}>
              {i.label}
            </button>
          ) : (
            <span class="bar-label">{i.label}</span>
          )}
          <svg class="bar" viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true">
            <rect x="0" y="0" height="10" width={(i.value / max) * 100} />
          </svg>
          <span class="num">{fmtNum(i.value)}</span>
        </li>
      ))}
    </ul>
  );
}
