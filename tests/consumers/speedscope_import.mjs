// Loads files into the real speedscope app (the npm package ships only a
// browser bundle, so it runs in headless Chromium) the way its own CLI does:
// index.html#localProfilePath=<script calling speedscope.loadFileFromBase64>.
// Success is what speedscope itself shows: the document title becomes
// "<name> - speedscope", no "Unrecognized format" alert, no import error.
// The sandwich view's table is read back so tests can compare speedscope's
// own totals with ours.
// Usage: node speedscope_import.mjs OUT_PREFIX FILE...   (prints JSON lines)
import { createRequire } from 'node:module'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { launch } from './browser.mjs'

const require = createRequire(import.meta.url)
const [outPrefix, ...files] = process.argv.slice(2)
const pkgDir = path.dirname(require.resolve('speedscope/package.json'))
const index = path.join(pkgDir, 'dist', 'release', 'index.html')

const b = await launch()
try {
  for (const [i, file] of files.entries()) {
    const result = { file, errors: [], dialogs: [] }
    const page = await b.context.newPage()
    page.on('pageerror', e => result.errors.push(String(e)))
    page.on('console', m => {
      if (m.type() === 'error' || /Failed to load format/.test(m.text())) result.errors.push(m.text())
    })
    page.on('dialog', d => { result.dialogs.push(d.message()); d.dismiss() })
    const name = path.basename(file)
    const js = path.join(os.tmpdir(), `coldstart-speedscope-${process.pid}-${i}.js`)
    fs.writeFileSync(js, `speedscope.loadFileFromBase64(${JSON.stringify(name)}, ${JSON.stringify(
      fs.readFileSync(file).toString('base64'))})`)
    try {
      await page.goto(`file://${index}#localProfilePath=${js}`)
      await page.waitForFunction(() => document.title !== 'speedscope', null, { timeout: 20000 })
        .catch(() => {})
      await page.waitForTimeout(500)
      result.title = await page.title()
      result.loaded = result.title !== 'speedscope' && result.title.endsWith(' - speedscope') &&
        !result.dialogs.length && !result.errors.length
      await page.screenshot({ path: `${outPrefix}-${i}.png` })
      await page.getByText('Sandwich').first().click()
      await page.waitForTimeout(500)
      // Sandwich view: one row per frame with speedscope's own total and self.
      result.rows = await page.evaluate(() => {
        const out = []
        for (const tr of document.querySelectorAll('table tr')) {
          const cells = [...tr.querySelectorAll('td')].map(td => td.textContent.trim())
          if (cells.length >= 3) out.push(cells)
        }
        return out
      })
      result.body_text = (await page.evaluate(() => document.body.innerText)).slice(0, 3000)
      await page.screenshot({ path: `${outPrefix}-${i}-sandwich.png` })
    } catch (e) {
      result.errors.push(String(e && e.stack || e))
    } finally {
      fs.rmSync(js, { force: true })
      await page.close()
    }
    console.log(JSON.stringify(result))
  }
} finally {
  await b.close()
}
