// PaddleOCR PP-OCRv4 (the npm package @gutenye/ocr-node: its ONNX models on onnxruntime's CPU
// binaries) over images, one JSON line per image: {"file", "lines": [{"text", "box"}], "seconds"}.
// A peer for the evaluations in this folder, never a dependency of folio.
//
//   mkdir -p train-work/paddle && (cd train-work/paddle && npm install --ignore-scripts @gutenye/ocr-node)
//   PADDLE_DIR=train-work/paddle node tools/train/mini4/paddle_ocr.mjs page1.png page2.jpg
//
// --ignore-scripts: the package's install script would fetch GPU libraries; the CPU binaries ship in it.
import path from 'node:path'

const dir = path.resolve(process.env.PADDLE_DIR || 'train-work/paddle')
const { default: Ocr } = await import(path.join(dir, 'node_modules/@gutenye/ocr-node/build/index.js'))
const ocr = await Ocr.create()
for (const file of process.argv.slice(2)) {
  const t0 = performance.now()
  const found = await ocr.detect(file)
  const seconds = (performance.now() - t0) / 1000
  console.log(JSON.stringify({ file, lines: found.map((l) => ({ text: l.text, box: l.box })), seconds }))
}
