// hopsim view: a recording's vehicles in 3-D (instanced bodies, trails cut at the playback time),
// a timeline with its events, and plots of chosen signals with a cursor tied to the time slider.
// Data comes from the server of `hopsim view` (hopsim/view/server.py): /api/run, /api/poses,
// /api/signal. Positions are in the inertial frame N relative to the run's origin (m); attitudes
// are q_BN (scalar last), so a body's +x axis (the nose cone) is drawn where R(q_BN) x_B points.
// Asked for (`hopsim view --hill CHIEF`), they are relative to a chief in its Hill frame H
// instead (poses.frame "hill:<chief>"; x radial, y along-track, z orbit normal) and attitudes q_BH.
import * as THREE from 'three';
import { OrbitControls } from '/static/vendor/three/OrbitControls.js';

const $ = (id) => document.getElementById(id);
const startedAt = performance.now();
const MAX_TRAIL_VERTICES = 400_000;       // trail segments' ends, all vehicles together (decimated in time)
const MAX_LABELS = 50;                    // vehicles named on screen up to this many

const state = { run: null, poses: null, t: 0, playing: false, speed: 1, frameTimes: [], poseMs: [], plots: [],
                drawnAt: null, viewChanged: true, webgl: false };

// ------------------------------------------------------------------------------------ WebGL

// whether this browser gives the page a WebGL context (it may be turned off, or blocked on its GPU)
function hasWebGL() {
  try {
    const canvas = document.createElement('canvas');
    return Boolean(canvas.getContext('webgl2') || canvas.getContext('webgl'));
  } catch (err) {
    return false;
  }
}

// without WebGL: say so where the 3-D view would be; the timeline, events and plots (drawn in SVG) work
function noWebGL(why) {
  const notice = $('no-webgl');
  notice.querySelector('.why').textContent = why ? ` (${why})` : '';
  notice.hidden = false;
  window.hopsimViewer.webgl = false;
}

// ------------------------------------------------------------------------------------ data

function parsePoses(buffer) {
  const view = new DataView(buffer);
  const headerLength = view.getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, headerLength)));
  const T = header.instants, N = header.vehicles.length;
  let at = 4 + headerLength;
  const t = new Float64Array(buffer, at, T); at += 8 * T;
  const r = new Float32Array(buffer, at, T * N * 3); at += 4 * T * N * 3;
  const q = new Float32Array(buffer, at, T * N * 4);
  return { ...header, T, N, t, r, q };
}

// the bracketing instants of time t and the fraction between them
function locate(poses, t) {
  const times = poses.t;
  if (poses.T === 0) return [0, 0, 0];
  if (t <= times[0]) return [0, 0, 0];
  if (t >= times[poses.T - 1]) return [poses.T - 1, poses.T - 1, 0];
  let lo = 0, hi = poses.T - 1;
  while (hi - lo > 1) { const mid = (lo + hi) >> 1; if (times[mid] <= t) lo = mid; else hi = mid; }
  return [lo, hi, (t - times[lo]) / (times[hi] - times[lo])];
}

// ------------------------------------------------------------------------------------ 3-D scene

const three = {};

function extentOf(poses) {
  const lo = [Infinity, Infinity, Infinity], hi = [-Infinity, -Infinity, -Infinity];
  const r = poses.r, step = Math.max(1, Math.floor(r.length / 3 / 200000));
  for (let k = 0; k < r.length / 3; k += step) {
    for (let d = 0; d < 3; d++) {
      const x = r[3 * k + d];
      if (Number.isFinite(x)) { if (x < lo[d]) lo[d] = x; if (x > hi[d]) hi[d] = x; }
    }
  }
  if (!Number.isFinite(lo[0])) return { lo: [-1, -1, -1], hi: [1, 1, 1] };
  return { lo, hi };
}

function buildScene(run, poses) {
  const host = $('scene');
  const renderer = new THREE.WebGLRenderer({ antialias: poses.N <= 1000, logarithmicDepthBuffer: run.scene.kind === 'orbit' });
  renderer.setPixelRatio(Math.min(window.devicePixelRatio, 2));
  host.appendChild(renderer.domElement);
  const scene = new THREE.Scene();
  scene.background = new THREE.Color(0x101318);
  scene.add(new THREE.AmbientLight(0xffffff, 0.55));
  const sun = new THREE.DirectionalLight(0xffffff, 1.6);
  sun.position.set(1, 2, 3);
  scene.add(sun);

  const { lo, hi } = extentOf(poses);
  const size = Math.max(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], 1e-3);
  const centre = new THREE.Vector3((lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, (lo[2] + hi[2]) / 2);
  const spacing = size / Math.max(1, Math.cbrt(poses.N));
  const body = poses.N <= 1 ? Math.min(0.2, size / 5 || 0.2) : Math.max(size / 400, Math.min(0.2, 0.3 * spacing));

  const camera = new THREE.PerspectiveCamera(50, 1, Math.max(body / 20, 1e-4), 1e9);
  camera.up.set(0, 0, 1);
  camera.position.copy(centre).add(new THREE.Vector3(1.2 * size, -1.6 * size, 0.9 * size + body * 8));
  const controls = new OrbitControls(camera, renderer.domElement);
  controls.target.copy(centre);
  controls.update();
  controls.addEventListener('change', () => { state.viewChanged = true; });

  scene.add(environment(run, poses, size, centre));
  Object.assign(three, { renderer, scene, camera, controls, bodies: null, trails: null, body, size });
  setPoses(poses);
  const resize = () => {
    const w = host.clientWidth, h = host.clientHeight;
    renderer.setSize(w, h, false);
    renderer.domElement.style.width = w + 'px';
    renderer.domElement.style.height = h + 'px';
    camera.aspect = w / Math.max(h, 1);
    camera.updateProjectionMatrix();
    state.viewChanged = true;
  };
  window.addEventListener('resize', resize);
  resize();
}

// the vehicles (one instance each of a box, 1 x 0.7 x 0.5 bodies, with a nose cone along +x_B)
// and their trails, for these poses; a live run's growing recording calls it again
function setPoses(poses) {
  state.poses = poses;
  if (!three.bodies || three.bodies.instanceMatrix.count < poses.N) {
    if (three.bodies) { three.scene.remove(three.bodies); three.bodies.dispose(); }
    const bodies = new THREE.InstancedMesh(vehicleGeometry(poses.N <= 1000 ? 16 : 6),
      new THREE.MeshLambertMaterial({ vertexColors: true }), Math.max(1, poses.N));
    bodies.instanceMatrix.setUsage(THREE.DynamicDrawUsage);
    bodies.frustumCulled = false;
    three.scene.add(bodies);
    three.bodies = bodies;
  }
  three.bodies.count = poses.N;
  const visible = three.trails ? three.trails.visible : true;
  if (three.trails) { three.scene.remove(three.trails); three.trails.geometry.dispose(); }
  three.trails = buildTrails(poses);
  three.trails.visible = visible;
  three.scene.add(three.trails);
  state.viewChanged = true;
}

// a body and its nose as one geometry (one draw for all vehicles), coloured per vertex
function vehicleGeometry(coneSegments) {
  const parts = [
    [new THREE.BoxGeometry(1, 0.7, 0.5).toNonIndexed(), new THREE.Color(0xd98c26)],
    [new THREE.ConeGeometry(0.22, 0.5, coneSegments).rotateZ(-Math.PI / 2).translate(0.75, 0, 0).toNonIndexed(), new THREE.Color(0xe53935)],
  ];
  const count = parts.reduce((sum, [g]) => sum + g.attributes.position.count, 0);
  const position = new Float32Array(3 * count), normal = new Float32Array(3 * count), color = new Float32Array(3 * count);
  let at = 0;
  for (const [g, c] of parts) {
    position.set(g.attributes.position.array, 3 * at);
    normal.set(g.attributes.normal.array, 3 * at);
    for (let k = 0; k < g.attributes.position.count; k++) color.set([c.r, c.g, c.b], 3 * (at + k));
    at += g.attributes.position.count;
  }
  const geometry = new THREE.BufferGeometry();
  geometry.setAttribute('position', new THREE.BufferAttribute(position, 3));
  geometry.setAttribute('normal', new THREE.BufferAttribute(normal, 3));
  geometry.setAttribute('color', new THREE.BufferAttribute(color, 3));
  return geometry;
}

// the test volume's walls, the Earth, or a grid, in the page's frame (N less the run's origin)
function environment(run, poses, size, centre) {
  const group = new THREE.Group();
  const o = poses.origin_N;
  if (run.scene.kind === 'volume') {
    const [a, b] = [run.scene.min_N, run.scene.max_N];
    const box = new THREE.BoxGeometry(b[0] - a[0], b[1] - a[1], b[2] - a[2]);
    const walls = new THREE.LineSegments(new THREE.EdgesGeometry(box), new THREE.LineBasicMaterial({ color: 0x5c6b80 }));
    walls.position.set((a[0] + b[0]) / 2 - o[0], (a[1] + b[1]) / 2 - o[1], (a[2] + b[2]) / 2 - o[2]);
    group.add(walls);
  } else if (run.scene.kind === 'orbit') {
    const earth = new THREE.Mesh(new THREE.SphereGeometry(run.scene.earth_radius_m, 96, 48),
      new THREE.MeshStandardMaterial({ color: 0x2a5d9f, wireframe: true, transparent: true, opacity: 0.35 }));
    earth.position.set(-o[0], -o[1], -o[2]);
    group.add(earth);
  } else {
    const grid = new THREE.GridHelper(size * 2, 20, 0x3a4250, 0x262c36);
    grid.rotation.x = Math.PI / 2;                       // the frame's x-y plane (in H: radial, along-track)
    grid.position.set(centre.x, centre.y, centre.z - size / 2);
    group.add(grid);
  }
  group.add(new THREE.AxesHelper(size / 6));             // the frame's axes at its origin: x red, y green, z blue
  return group;
}

// every vehicle's path as line segments carrying their times; the shader shows those before now
function buildTrails(poses) {
  const { T, N, r, t } = poses;
  const stride = Math.max(1, Math.ceil((2 * T * N) / MAX_TRAIL_VERTICES));
  const points = Math.floor((T - 1) / stride) + 1;
  const positions = new Float32Array(Math.max(0, points - 1) * N * 6);
  const times = new Float32Array(Math.max(0, points - 1) * N * 2);
  let v = 0;
  for (let n = 0; n < N; n++) {
    for (let k = 0; k + stride < T; k += stride) {
      const a = 3 * (k * N + n), b = 3 * ((k + stride) * N + n);
      if (!Number.isFinite(r[a]) || !Number.isFinite(r[b])) continue;
      positions.set([r[a], r[a + 1], r[a + 2], r[b], r[b + 1], r[b + 2]], 3 * v);
      times[v] = t[k] - t[0]; times[v + 1] = t[k + stride] - t[0];
      v += 2;
    }
  }
  const geometry = new THREE.BufferGeometry();
  geometry.setAttribute('position', new THREE.BufferAttribute(positions.subarray(0, 3 * v), 3));
  geometry.setAttribute('aTime', new THREE.BufferAttribute(times.subarray(0, v), 1));
  const material = new THREE.ShaderMaterial({
    uniforms: { uNow: { value: 0 }, uColor: { value: new THREE.Color(0x4fc3f7) } },
    vertexShader: `attribute float aTime; varying float vTime;
      #include <common>
      #include <logdepthbuf_pars_vertex>
      void main() { vTime = aTime; gl_Position = projectionMatrix * modelViewMatrix * vec4(position, 1.0);
      #include <logdepthbuf_vertex>
      }`,
    fragmentShader: `uniform float uNow; uniform vec3 uColor; varying float vTime;
      #include <logdepthbuf_pars_fragment>
      void main() { if (vTime > uNow) discard;
      #include <logdepthbuf_fragment>
      gl_FragColor = vec4(uColor, 0.75); }`,
    transparent: true,
  });
  const lines = new THREE.LineSegments(geometry, material);
  lines.frustumCulled = false;
  return lines;
}

const matrix = new THREE.Matrix4(), position = new THREE.Vector3(), scale = new THREE.Vector3();
const qa = new THREE.Quaternion(), qb = new THREE.Quaternion(), hidden = new THREE.Matrix4().makeScale(0, 0, 0);

function drawPoses(t) {
  const p = state.poses;
  if (!p || p.N === 0) return;
  const [i, j, f] = locate(p, t);
  const { r, q, N } = p;
  scale.setScalar(three.body);
  for (let n = 0; n < N; n++) {
    const a = 3 * (i * N + n), b = 3 * (j * N + n);
    if (!Number.isFinite(r[a])) { three.bodies.setMatrixAt(n, hidden); continue; }
    const g = Number.isFinite(r[b]) ? f : 0;
    position.set(r[a] + g * (r[b] - r[a]), r[a + 1] + g * (r[b + 1] - r[a + 1]), r[a + 2] + g * (r[b + 2] - r[a + 2]));
    const c = 4 * (i * N + n), d = 4 * (j * N + n);
    qa.set(q[c], q[c + 1], q[c + 2], q[c + 3]);
    if (g > 0) { qb.set(q[d], q[d + 1], q[d + 2], q[d + 3]); qa.slerp(qb, g); }
    qa.normalize();
    matrix.compose(position, qa, scale);
    three.bodies.setMatrixAt(n, matrix);
  }
  three.bodies.instanceMatrix.needsUpdate = true;
  three.trails.material.uniforms.uNow.value = t - p.t[0];
  if (N <= MAX_LABELS) drawLabels(i, j, f);
}

function drawLabels(i, j, f) {
  const p = state.poses, host = $('labels');
  if (host.childElementCount !== p.N) host.replaceChildren(...p.vehicles.map((name) => Object.assign(document.createElement('span'), { textContent: name })));
  const w = host.clientWidth, h = host.clientHeight;
  for (let n = 0; n < p.N; n++) {
    const a = 3 * (i * p.N + n), b = 3 * (j * p.N + n), label = host.children[n];
    if (!Number.isFinite(p.r[a])) { label.style.display = 'none'; continue; }
    position.set(p.r[a] + f * (p.r[b] - p.r[a]), p.r[a + 1] + f * (p.r[b + 1] - p.r[a + 1]), p.r[a + 2] + f * (p.r[b + 2] - p.r[a + 2]));
    position.project(three.camera);
    const visible = position.z < 1 && Math.abs(position.x) <= 1 && Math.abs(position.y) <= 1;
    label.style.display = visible ? '' : 'none';
    label.style.left = ((position.x + 1) / 2) * w + 'px';
    label.style.top = ((1 - position.y) / 2) * h + 'px';
  }
}

// ------------------------------------------------------------------------------------ timeline

function setTime(t) {
  const run = state.run;
  state.t = Math.min(Math.max(t, run.t0_s), run.t1_s);
  $('slider').value = String(state.t);
  $('clock').textContent = `t = ${state.t.toFixed(3)} s`;
  if (state.t >= run.t1_s && !run.follow) pause();       // following a live run, playing waits for more
}

function play() {
  if (state.t >= state.run.t1_s && !state.run.follow) state.t = state.run.t0_s;
  state.playing = true; $('play').textContent = '❚❚';
}
function pause() { state.playing = false; $('play').textContent = '▶'; }

function buildTimeline(run) {
  const slider = $('slider');
  slider.addEventListener('input', () => { pause(); setTime(parseFloat(slider.value)); });
  $('play').addEventListener('click', () => (state.playing ? pause() : play()));
  $('speed').addEventListener('change', () => { state.speed = parseFloat($('speed').value); });
  $('trails').addEventListener('change', () => {
    if (three.trails) three.trails.visible = $('trails').checked;
    state.viewChanged = true;
  });
  window.addEventListener('keydown', (e) => {
    if (e.code === 'Space' && e.target.tagName !== 'INPUT') { e.preventDefault(); state.playing ? pause() : play(); }
  });
  setTimeline(run);
}

// the slider's span and the events on it and in the list
function setTimeline(run) {
  const slider = $('slider');
  slider.min = String(run.t0_s); slider.max = String(run.t1_s); slider.step = 'any';
  const span = Math.max(run.t1_s - run.t0_s, 1e-9);
  const marks = $('marks'), list = $('events');
  marks.replaceChildren();
  list.replaceChildren();
  $('event-count').textContent = `(${run.events.length})`;
  for (const ev of run.events) {
    const jump = () => { pause(); setTime(ev.t_s); };
    const text = `${ev.kind} ${ev.name}${ev.detail ? ': ' + ev.detail : ''}`;
    const mark = Object.assign(document.createElement('i'), { className: 'kind-' + ev.kind, title: `${ev.t_s.toFixed(3)} s ${text}` });
    mark.style.left = `${(100 * (ev.t_s - run.t0_s)) / span}%`;
    mark.addEventListener('click', jump);
    marks.appendChild(mark);
    const item = document.createElement('li');
    item.className = 'kind-' + ev.kind;
    item.innerHTML = `<span class="t">${ev.t_s.toFixed(3)} s</span>`;
    item.appendChild(document.createTextNode(text));
    item.addEventListener('click', jump);
    list.appendChild(item);
  }
}

// ------------------------------------------------------------------------------------ plots

const MAX_SUGGESTIONS = 200;              // topics offered at once in the picker

function buildPicker(catalog) {
  const topics = new Map(catalog.topics);
  const names = catalog.topics.map(([topic]) => topic);
  const suggest = () => {                 // the topics that contain what is typed, at most MAX_SUGGESTIONS
    const typed = $('topic').value;
    const found = [];
    for (const name of names) { if (name.includes(typed)) { found.push(name); if (found.length === MAX_SUGGESTIONS) break; } }
    $('topics').replaceChildren(...found.map((topic) => Object.assign(document.createElement('option'), { value: topic })));
  };
  suggest();
  let shownType = null;
  const fill = () => {                    // the fields of the topic's type (kept while the type stays)
    const type = topics.get($('topic').value) || null;
    if (type === shownType) return;
    shownType = type;
    const fields = catalog.types[type] || [];
    $('field').replaceChildren(...fields.map((f) => Object.assign(document.createElement('option'), { value: f, textContent: f })));
  };
  $('topic').addEventListener('input', () => { suggest(); fill(); });
  $('topic').addEventListener('change', fill);
  $('add-plot').addEventListener('click', () => addPlot(`${$('topic').value}.${$('field').value}`));
}

async function addPlot(name) {
  $('plot-error').textContent = '';
  const reply = await fetch('/api/signal?name=' + encodeURIComponent(name));
  const data = await reply.json();
  if (!reply.ok) { $('plot-error').textContent = data.error; return null; }
  const box = Object.assign(document.createElement('div'), { className: 'plot' });
  const close = Object.assign(document.createElement('button'), { className: 'close', textContent: '×', title: 'remove' });
  box.appendChild(close);
  $('plots').appendChild(box);
  const cursor = { type: 'line', xref: 'x', yref: 'paper', x0: state.t, x1: state.t, y0: 0, y1: 1, line: { color: '#ffb74d', width: 1 } };
  await Plotly.newPlot(box, [{ x: data.t_s, y: data.values, type: state.webgl ? 'scattergl' : 'scatter', mode: 'lines', line: { shape: 'hv', width: 1.2 } }], {
    title: { text: name + (data.shown < data.points ? ` (${data.shown} of ${data.points} points)` : ''), font: { size: 11 } },
    margin: { l: 50, r: 10, t: 26, b: 28 }, paper_bgcolor: '#15181d', plot_bgcolor: '#1b1f26',
    font: { color: '#d8dde5', size: 10 }, xaxis: { title: { text: 's' }, gridcolor: '#2a2f37' },
    yaxis: { gridcolor: '#2a2f37' }, shapes: [cursor],
  }, { displaylogo: false, responsive: true });
  box.on('plotly_click', (ev) => { if (ev.points.length) { pause(); setTime(ev.points[0].x); } });
  const plot = { name, box, shownAt: null };
  state.plots.push(plot);
  close.addEventListener('click', () => { Plotly.purge(box); box.remove(); state.plots.splice(state.plots.indexOf(plot), 1); });
  return plot;
}

let lastCursorUpdate = 0;
function moveCursors(now) {
  if (now - lastCursorUpdate < 100) return;                // at most 10 relayouts a second
  lastCursorUpdate = now;
  for (const plot of state.plots) {
    if (plot.shownAt === state.t) continue;
    plot.shownAt = state.t;
    Plotly.relayout(plot.box, { 'shapes[0].x0': state.t, 'shapes[0].x1': state.t });
  }
}

// ------------------------------------------------------------------------------------ loop

let lastFrame = null;
function frame(now) {
  requestAnimationFrame(frame);
  if (lastFrame !== null && state.playing) setTime(state.t + ((now - lastFrame) / 1000) * state.speed);
  lastFrame = now;
  while (state.frameTimes.length && now - state.frameTimes[0] > 2000) state.frameTimes.shift();
  moveCursors(now);
  if (!state.webgl) return;                                       // no 3-D view to draw
  three.controls.update();
  if (state.drawnAt === state.t && !state.viewChanged) return;   // nothing moved: keep the last image
  state.drawnAt = state.t;
  state.viewChanged = false;
  const before = performance.now();
  drawPoses(state.t);
  state.poseMs.push(performance.now() - before);
  if (state.poseMs.length > 120) state.poseMs.shift();
  three.renderer.render(three.scene, three.camera);
  state.frameTimes.push(now);
  $('hud').textContent = `${state.poses.N} vehicles · ${fps().toFixed(0)} frames/s`;
}

function fps() {
  const f = state.frameTimes;
  return f.length > 1 ? (1000 * (f.length - 1)) / (f[f.length - 1] - f[0]) : 0;
}

// a recording still being written (`hopsim view --follow`): read again what it holds now
const FOLLOW_EVERY_MS = 1500;
async function follow() {
  const run = await fetch('/api/run').then((r) => r.json());
  if (run.instants === state.run.instants && run.events.length === state.run.events.length) return;
  const atEnd = state.t >= state.run.t1_s - 1e-9;
  const poses = parsePoses(await fetch('/api/poses').then((r) => r.arrayBuffer()));
  state.run = run;
  if (state.webgl) setPoses(poses); else state.poses = poses;
  setTimeline(run);
  if (atEnd) setTime(run.t1_s);
  $('subtitle').textContent = subtitle(run) + ' · following';
}

function subtitle(run) {
  const info = run.info.run || {};
  const frame = run.scene.kind === 'hill' ? ` · Hill frame of ${run.scene.chief}` : '';
  return `${run.file} · ${info.scenario || 'run'} · ${run.vehicles} vehicles${frame} · ${run.t0_s.toFixed(2)}–${run.t1_s.toFixed(2)} s`;
}

async function main() {
  const [run, buffer] = await Promise.all([
    fetch('/api/run').then((r) => r.json()),
    fetch('/api/poses').then((r) => r.arrayBuffer()),
  ]);
  state.run = run;
  state.poses = parsePoses(buffer);
  state.t = run.t0_s;
  $('subtitle').textContent = subtitle(run) + (run.follow ? ' · following' : '');
  if (hasWebGL()) {
    try {
      buildScene(run, state.poses);
      state.webgl = true;
    } catch (err) {
      noWebGL(String(err.message || err));
    }
  } else {
    noWebGL('');
  }
  buildTimeline(run);
  buildPicker(run.catalog);
  setTime(run.t0_s);
  requestAnimationFrame(frame);
  const loadMs = performance.now() - startedAt;
  $('status').textContent = run.damaged_chunks ? `${run.damaged_chunks} damaged chunk(s) skipped` : `loaded in ${(loadMs / 1000).toFixed(2)} s`;
  window.hopsimViewer.loadMs = loadMs;
  window.hopsimViewer.webgl = state.webgl;
  window.hopsimViewer.ready = true;
  if (run.follow) setInterval(() => follow().catch(() => {}), FOLLOW_EVERY_MS);
}

// for tests and measurements: the viewer's state and controls
window.hopsimViewer = {
  ready: false, loadMs: null, webgl: null, fps, play, pause, setTime, addPlot,
  poseMs: () => { const m = [...state.poseMs].sort((a, b) => a - b); return m.length ? m[m.length >> 1] : 0; },
  state: () => ({ t: state.t, playing: state.playing, speed: state.speed, vehicles: state.poses ? state.poses.N : 0,
                  instants: state.poses ? state.poses.T : 0, plots: state.plots.map((p) => p.name),
                  cursor: state.plots.map((p) => p.box.layout.shapes[0].x0), events: state.run ? state.run.events.length : 0 }),
  instancePosition: (n) => { three.bodies.getMatrixAt(n, matrix); const v = new THREE.Vector3(); v.setFromMatrixPosition(matrix); return [v.x, v.y, v.z]; },
  instanceXAxis: (n) => { three.bodies.getMatrixAt(n, matrix); const v = new THREE.Vector3(); v.setFromMatrixColumn(matrix, 0).normalize(); return [v.x, v.y, v.z]; },
};

main().catch((err) => { $('status').textContent = 'failed: ' + err; window.hopsimViewer.error = String(err); });
