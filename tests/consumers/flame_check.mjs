// Opens a coldstart SVG flamegraph or HTML report in headless Chromium and
// exercises it like a user: counts rendered frames, hovers, searches through
// the real prompt dialog, clicks a frame to zoom, resets, takes screenshots.
// Usage: node flame_check.mjs FILE ZOOM_NAME SEARCH_TERM OUT_PREFIX
// Prints one JSON object on stdout.
import { launch } from './browser.mjs'
import path from 'node:path'

const [file, zoomName, term, outPrefix] = process.argv.slice(2)
const result = { file, errors: [] }
const b = await launch()
try {
  const page = await b.context.newPage()
  page.on('pageerror', e => result.errors.push(String(e)))
  page.on('console', m => { if (m.type() === 'error') result.errors.push(m.text()) })
  const t0 = Date.now()
  await page.goto('file://' + path.resolve(file))
  await page.waitForFunction(() => window.coldstart && window.coldstart.length > 0, null, { timeout: 30000 })
  result.load_ms = Date.now() - t0
  result.frames = await page.evaluate(() => window.coldstart[0].frames())
  // Frames the browser actually laid out with a non-zero box.
  result.rendered = await page.evaluate(() =>
    [...document.querySelectorAll('g.cs-f rect')].filter(r => r.getBBox().width > 0).length)
  await page.screenshot({ path: outPrefix + '-initial.png', fullPage: false })

  // Hover: the details line shows the frame's tooltip text.
  const target = page.locator(`g.cs-f[data-n="${zoomName}"]`).first()
  await target.scrollIntoViewIfNeeded()
  await target.hover()
  result.details = await page.evaluate(() => document.querySelector('.cs-details').textContent)

  // Search through the real UI: the Search button opens a prompt.
  page.once('dialog', d => d.accept(term))
  await page.locator('.cs-search').first().click()
  await page.waitForFunction(() => document.querySelector('.cs-matched').textContent.trim() !== '')
  result.matched = await page.evaluate(() => document.querySelector('.cs-matched').textContent)
  result.highlighted = await page.evaluate(() => document.querySelectorAll('g.cs-hit').length)
  result.highlight_fill = await page.evaluate(() => {
    const g = document.querySelector('g.cs-hit rect'); return g ? g.getAttribute('fill') : null })
  await page.screenshot({ path: outPrefix + '-search.png' })

  // Zoom by clicking the frame itself.
  const before = await page.evaluate(n => window.coldstart[0].width(n), zoomName)
  const t1 = Date.now()
  await target.click()
  result.zoom_ms = Date.now() - t1
  result.width_before = before
  result.width_after = await page.evaluate(n => window.coldstart[0].width(n), zoomName)
  result.zoomed = await page.evaluate(() => window.coldstart[0].zoomed())
  result.visible_zoomed = await page.evaluate(() => window.coldstart[0].visible())
  await page.screenshot({ path: outPrefix + '-zoom.png' })
  await page.locator('.cs-unzoom').first().click()
  result.width_reset = await page.evaluate(n => window.coldstart[0].width(n), zoomName)
  result.visible_reset = await page.evaluate(() => window.coldstart[0].visible())

  // The HTML report's table sorts when a header is clicked.
  if (await page.locator('#cs-modules').count()) {
    await page.locator('#cs-modules th', { hasText: 'cumulative' }).click()
    result.top_rows = await page.evaluate(() =>
      [...document.querySelectorAll('#cs-modules tbody tr')].slice(0, 3).map(r => +r.cells[3].getAttribute('data-v')))
    result.table_rows = await page.evaluate(() => document.querySelectorAll('#cs-modules tbody tr').length)
  }
} catch (e) {
  result.errors.push(String(e && e.stack || e))
} finally {
  await b.close()
}
console.log(JSON.stringify(result))
