// Shared headless Chromium launcher for the consumer checks.
import { createRequire } from 'node:module'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

const require = createRequire(import.meta.url)

export async function launch() {
  const { chromium } = require('playwright-core')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'coldstart-chromium-'))
  const executablePath = process.env.CHROMIUM || '/usr/bin/chromium'
  const context = await chromium.launchPersistentContext(dir, {
    executablePath,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1400, height: 900 },
  })
  // Offline: nothing may be fetched from the network.
  await context.route(/^https?:/, route => route.abort())
  return {
    context,
    async close() {
      await context.close()
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}
