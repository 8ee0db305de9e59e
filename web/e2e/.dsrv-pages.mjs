import { chromium } from 'playwright-core';
const A = process.env.URL || 'http://127.0.0.1:18931';
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
const reqs = [];
page.on('requestfinished', async (r) => { const t = r.timing(); reqs.push([r.url().replace(A, '').slice(0, 90), Math.round(t.responseEnd)]); });
await page.goto(A + '/#/about-blank-ish').catch(() => {});
await page.waitForTimeout(1500);
for (const [name, hash, sel] of [
  ['overview', '#/', '.tile-value'], ['queues', '#/queues', '#queue-list tbody tr'], ['queues search', '#/queues?q=scale-q-0999', '#queue-list tbody tr'],
  ['wide queue', '#/queues/wide', '#partitions tbody tr'], ['wide heatmap', '#/queues/wide?tab=lag', '.heat tbody tr'],
  ['groups', '#/groups', '#group-list tbody tr'], ['messages', '#/messages', '#msg-list tbody tr']]) {
  reqs.length = 0;
  const s = Date.now();
  await page.goto(A + '/' + hash);
  await page.locator(sel).first().waitFor({ timeout: 90000 });
  const ms = Date.now() - s;
  await page.waitForTimeout(300);
  console.log(name, ms, JSON.stringify(reqs.filter(([u]) => u.includes('api/'))));
}
await browser.close();
