// Draws the app's PNG icons (the favicon's "A" on the accent colour) with nothing but zlib, so the
// committed PNGs can be remade byte for byte: `node scripts/make-icons.mjs`. Writes
// app/static/icon-192.png and icon-512.png (rounded square, transparent corners: purpose "any")
// and icon-maskable-512.png (full bleed, the glyph inside the 80 % safe zone: purpose "maskable").
import { writeFileSync } from 'node:fs';
import { deflateSync } from 'node:zlib';

const ACCENT = [0x2f, 0x5b, 0xea];
const WHITE = [0xff, 0xff, 0xff];
// The favicon's glyph in its 32-unit box: two strokes of the "A" and its bar, 3 units wide.
const STROKES = [
  [
    [9, 22],
    [16, 9],
    [23, 22],
  ],
  [
    [12, 17],
    [20, 17],
  ],
];
const STROKE = 3;
const SAMPLES = 4; // 4×4 supersampling per pixel for smooth edges

function distToSegment(px, py, [ax, ay], [bx, by]) {
  const dx = bx - ax;
  const dy = by - ay;
  const t = Math.max(0, Math.min(1, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)));
  return Math.hypot(px - (ax + t * dx), py - (ay + t * dy));
}

function inGlyph(x, y) {
  for (const line of STROKES) {
    for (let i = 0; i + 1 < line.length; i++) if (distToSegment(x, y, line[i], line[i + 1]) <= STROKE / 2) return true;
  }
  return false;
}

function inRoundedSquare(x, y, radius) {
  const cx = Math.min(Math.max(x, radius), 32 - radius);
  const cy = Math.min(Math.max(y, radius), 32 - radius);
  return Math.hypot(x - cx, y - cy) <= radius;
}

/** RGBA pixels of a size×size icon; `maskable` fills the square and shrinks the glyph to the safe zone. */
function draw(size, maskable) {
  const px = Buffer.alloc(size * size * 4);
  const glyphScale = maskable ? 0.72 : 1; // the glyph spans 9..23 of 32: scaled about the centre
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      let bg = 0;
      let fg = 0;
      for (let sy = 0; sy < SAMPLES; sy++) {
        for (let sx = 0; sx < SAMPLES; sx++) {
          const ux = ((x + (sx + 0.5) / SAMPLES) / size) * 32;
          const uy = ((y + (sy + 0.5) / SAMPLES) / size) * 32;
          if (!maskable && !inRoundedSquare(ux, uy, 7)) continue;
          bg++;
          if (inGlyph(16 + (ux - 16) / glyphScale, 15.5 + (uy - 15.5) / glyphScale)) fg++;
        }
      }
      const n = SAMPLES * SAMPLES;
      const f = bg === 0 ? 0 : fg / bg;
      const o = (y * size + x) * 4;
      for (let c = 0; c < 3; c++) px[o + c] = Math.round(ACCENT[c] * (1 - f) + WHITE[c] * f);
      px[o + 3] = Math.round((255 * bg) / n);
    }
  }
  return px;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

function png(size, rgba) {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header[8] = 8; // bit depth
  header[9] = 6; // RGBA
  // Each scanline starts with filter type 0 (none).
  const raw = Buffer.alloc(size * (size * 4 + 1));
  for (let y = 0; y < size; y++) rgba.copy(raw, y * (size * 4 + 1) + 1, y * size * 4, (y + 1) * size * 4);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', header), chunk('IDAT', deflateSync(raw, { level: 9 })), chunk('IEND', Buffer.alloc(0))]);
}

for (const [name, size, maskable] of [
  ['icon-192.png', 192, false],
  ['icon-512.png', 512, false],
  ['icon-maskable-512.png', 512, true],
]) {
  writeFileSync(`app/static/${name}`, png(size, draw(size, maskable)));
}
