// Opens a coldstart HTML report in headless Chromium at 1280x800 as a user
// would: takes a screenshot, collects script errors, reads the sections, the
// module table's default order, and sorts it by clicking column headers.
// Usage: node html_check.mjs FILE SCREENSHOT.png
// Prints one JSON object on stdout.
import { launch } from './browser.mjs'
import path from 'node:path'

const [file, shot] = process.argv.slice(2)
const result = { file, errors: [] }
const b = await launch()
try {
  const page = await b.context.newPage()
  await page.setViewportSize({ width: 1280, height: 800 })
  page.on('pageerror', e => result.errors.push(String(e)))
  page.on('console', m => { if (m.type() === 'error') result.errors.push(m.text()) })
  await page.goto('file://' + path.resolve(file))
  await page.waitForFunction(() => window.coldstart && window.coldstart.length > 0, null, { timeout: 30000 })
  await page.screenshot({ path: shot, fullPage: false })
  result.viewport = page.viewportSize()
  result.headings = await page.evaluate(() => [...document.querySelectorAll('h2')].map(h => h.textContent))
  // What is on the first screen: the title and the summary are visible without scrolling.
  result.first_screen = await page.evaluate(() => {
    const seen = []
    for (const el of document.querySelectorAll('h1, h2, th')) {
      const r = el.getBoundingClientRect()
      if (r.width > 0 && r.top >= 0 && r.bottom <= window.innerHeight) seen.push(el.textContent)
    }
    return seen
  })
  result.body_text = await page.evaluate(() => document.body.innerText)
  const col = (name) => page.evaluate(n => {
    const ths = [...document.querySelectorAll('#cs-modules thead th')]
    return ths.findIndex(th => th.textContent === n)
  }, name)
  const values = (i) => page.evaluate(k =>
    [...document.querySelectorAll('#cs-modules tbody tr')].map(r => {
      const c = r.cells[k]; const v = c.getAttribute('data-v'); return v === null ? c.textContent : +v
    }), i)
  const cum = await col('cumulative')
  result.default_cum = await values(cum)
  result.sorted = {}
  for (const name of ['module', 'kind', 'self', 'cumulative', 'depth', 'process']) {
    const i = await col(name)
    await page.locator('#cs-modules thead th').nth(i).click()
    const first = await values(i)
    await page.locator('#cs-modules thead th').nth(i).click()
    const second = await values(i)
    result.sorted[name] = { first, second }
  }
  result.processes = await page.evaluate(() => document.querySelectorAll('#cs-processes tbody tr').length)
} catch (e) {
  result.errors.push(String(e && e.stack || e))
} finally {
  await b.close()
}
console.log(JSON.stringify(result))
