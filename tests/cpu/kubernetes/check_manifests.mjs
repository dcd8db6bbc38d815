#!/usr/bin/env node
// Validates docker/kubernetes/ without a cluster (issue 18):
//   1. every YAML document parses and validates against the Kubernetes API schemas of its
//      apiVersion and kind (kubernetes-models: types, required fields, enums);
//   2. the manifests agree with each other, with agileosd's configuration and with the device
//      plugin: the resource the pods ask for is the plugin's (docker/device_plugin/devices.h), the
//      plugin's flags name the configuration's socket, runtime_dir, device and max_workers, every
//      path handed to client pods is mounted in the DaemonSet at the same path on the host, the
//      references (namespace, ServiceAccount, ConfigMap) resolve, and the example pod asks for no
//      device node, host path or privilege.
// The schemas accept fields they do not know (a misspelt key is not an error there); the
// cross-references cover the keys this deployment relies on.
//
// With --agileosd PATH, agileosd --check-config also reads the ConfigMap's agileosd.json.
//
// Usage: node check_manifests.mjs --root REPO [--agileosd PATH]             exit 1 on a problem
//        node check_manifests.mjs --root REPO [--agileosd PATH] --self-test also: broken copies
//                                                                           are rejected
import {spawnSync} from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// The npm packages come from scripts/install-deps.sh (npm ci here): say so when they are missing.
let parseAllDocuments;
try {
  ({parseAllDocuments} = await import('yaml'));
  await import('kubernetes-models/v1/Pod');
} catch (error) {
  console.error(`check_manifests: ${error.message}`);
  console.error(
      'check_manifests: its npm packages are missing: run scripts/install-deps.sh (npm ci in tests/cpu/kubernetes)');
  process.exit(1);
}

const args = process.argv.slice(2);
const rootIndex = args.indexOf('--root');
if (rootIndex < 0 || !args[rootIndex + 1]) {
  console.error('usage: check_manifests.mjs --root REPO [--self-test]');
  process.exit(2);
}
const root = args[rootIndex + 1];
const manifestDir = path.join(root, 'docker/kubernetes');
const agileosdIndex = args.indexOf('--agileosd');
const agileosd = agileosdIndex >= 0 ? args[agileosdIndex + 1] : undefined;

// agileosd's own verdict on a configuration text: "" when it accepts it, its errors otherwise.
// The daemon runs from a scratch directory with a stand-in worker beside it: --check-config looks
// for the worker next to the daemon, as the image has it, and this build may not have built it.
function daemonRejects(text) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agileos-k8s-config-'));
  try {
    const daemon = path.join(dir, 'agileosd');
    fs.copyFileSync(agileosd, daemon);
    fs.chmodSync(daemon, 0o755);
    fs.writeFileSync(path.join(dir, 'agileos-worker'), '#!/bin/sh\nexit 1\n', {mode: 0o755});
    const file = path.join(dir, 'agileosd.json');
    fs.writeFileSync(file, text);
    const run = spawnSync(daemon, ['--config', file, '--check-config'], {encoding: 'utf8'});
    return run.status === 0 ? '' : `${run.stderr}${run.error ?? ''}`.trim() || `exit ${run.status}`;
  } finally {
    fs.rmSync(dir, {recursive: true, force: true});
  }
}

// "apps/v1" + "DaemonSet" -> kubernetes-models/apps/v1/DaemonSet; the core group is "v1".
async function modelFor(apiVersion, kind) {
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') return null;
  try {
    const module = await import(`kubernetes-models/${apiVersion}/${kind}`);
    return module[kind] ?? null;
  } catch {
    return null;
  }
}

function yamlFiles(dir) {
  const files = [];
  for (const entry of fs.readdirSync(dir, {withFileTypes: true})
           .sort((a, b) => a.name.localeCompare(b.name))) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory())
      files.push(...yamlFiles(full));
    else if (/\.ya?ml$/.test(entry.name))
      files.push(full);
  }
  return files;
}

// [{file, index, object}] of every document, errors for those that do not parse.
function loadManifests(dir, errors) {
  const documents = [];
  for (const file of yamlFiles(dir)) {
    const relative = path.relative(dir, file);
    const parsed = parseAllDocuments(fs.readFileSync(file, 'utf8'), {uniqueKeys: true});
    parsed.forEach((doc, index) => {
      for (const problem of [...doc.errors, ...doc.warnings])
        errors.push(`${relative}#${index}: YAML: ${problem.message}`);
      const object = doc.toJS();
      if (object !== null && object !== undefined) documents.push({file: relative, index, object});
    });
  }
  return documents;
}

async function validateSchemas(documents, errors) {
  for (const {file, index, object} of documents) {
    const where = `${file}#${index} (${object?.kind ?? '?'} ${object?.metadata?.name ?? '?'})`;
    const Model = await modelFor(object?.apiVersion, object?.kind);
    if (!Model) {
      errors.push(
          `${where}: no Kubernetes API schema for apiVersion ${object?.apiVersion} kind ${object?.kind}`);
      continue;
    }
    try {
      new Model(object).validate();
    } catch (error) {
      errors.push(`${where}: ${error.message}`);
    }
  }
}

const flagValue = (command, flag) => {
  for (let i = 0; i < command.length; ++i) {
    if (command[i] === flag) return command[i + 1];
    if (command[i].startsWith(`${flag}=`)) return command[i].slice(flag.length + 1);
  }
  return undefined;
};
const commandOf = (container) => [...(container.command ?? []), ...(container.args ?? [])];
const find = (documents, kind, name) =>
    documents.find((d) => d.object.kind === kind && (!name || d.object.metadata?.name === name))?.object;
const normal = (p) => path.posix.normalize(p).replace(/(.)\/$/, '$1');
const within = (inner, outer) =>
    normal(inner) === normal(outer) || normal(inner).startsWith(normal(outer) + '/');

function checkReferences(documents, errors) {
  const fail = (message) => errors.push(`cross-reference: ${message}`);
  const header = fs.readFileSync(path.join(root, 'docker/device_plugin/devices.h'), 'utf8');
  const resourceName = /kResourceName = "([^"]+)"/.exec(header)?.[1];
  if (!resourceName) return fail('docker/device_plugin/devices.h names no kResourceName');

  const namespace = find(documents, 'Namespace');
  const daemonSet = find(documents, 'DaemonSet');
  const configMap = find(documents, 'ConfigMap');
  if (!namespace || !daemonSet || !configMap)
    return fail('expected a Namespace, a ConfigMap and a DaemonSet');
  for (const {object} of documents) {
    if (object.kind !== 'Namespace' && object.metadata?.namespace === undefined)
      fail(`${object.kind} ${object.metadata?.name} names no namespace`);
  }
  const ns = namespace.metadata.name;
  for (const object of [daemonSet, configMap, find(documents, 'ServiceAccount')].filter(Boolean)) {
    if (object.metadata.namespace !== ns)
      fail(`${object.kind} ${object.metadata.name} is not in namespace ${ns}`);
  }

  // agileosd's configuration.
  let config;
  try {
    config = JSON.parse(configMap.data?.['agileosd.json'] ?? '');
  } catch (error) {
    return fail(`ConfigMap ${configMap.metadata.name}: agileosd.json is not JSON: ${error.message}`);
  }
  if (agileosd) {
    const rejected = daemonRejects(configMap.data['agileosd.json']);
    if (rejected) fail(`agileosd --check-config rejects the ConfigMap's agileosd.json: ${rejected}`);
  }
  const socketPath = config.socket_path ?? '/run/agileos/agileosd.sock';
  const runtimeDir = config.runtime_dir ?? '/run/agileos';
  const maxWorkers = config.worker?.max_workers ?? 4;
  const device = config.worker?.device ?? 0;

  const pod = daemonSet.spec.template.spec;
  if (pod.serviceAccountName && !find(documents, 'ServiceAccount', pod.serviceAccountName))
    fail(`DaemonSet uses ServiceAccount ${pod.serviceAccountName}, which no manifest defines`);
  if (!pod.nodeSelector || Object.keys(pod.nodeSelector).length === 0)
    fail('DaemonSet has no nodeSelector (GPU nodes)');
  const volumes = new Map((pod.volumes ?? []).map((v) => [v.name, v]));
  const containers = [...(pod.initContainers ?? []), ...pod.containers];
  const container = (name) => pod.containers.find((c) => c.name === name);
  // A path a container sees is the host's at the same path: what the plugin hands to clients,
  // and the socket path the daemon reports to them, are host paths. (The kubelet's directory alone
  // may sit elsewhere on the host: the plugin registers its socket by file name.)
  const hostMountOf = (c, wanted, samePath) => {
    for (const mount of c.volumeMounts ?? []) {
      const volume = volumes.get(mount.name);
      if (!volume) {
        fail(`container ${c.name} mounts volume ${mount.name}, which the DaemonSet does not define`);
        continue;
      }
      if (!within(wanted, mount.mountPath)) continue;
      if (!volume.hostPath)
        return {
          mount,
          volume,
          error: `${wanted} is mounted from a ${
              Object.keys(volume).filter((k) => k !== 'name')[0]} volume, not the host's`
        };
      if (samePath && normal(volume.hostPath.path) !== normal(mount.mountPath))
        return {
          mount,
          volume,
          error:
              `${wanted}: host ${volume.hostPath.path} is mounted at ${mount.mountPath}, not at the same path`
        };
      return {mount, volume};
    }
    return {error: `${wanted} is not mounted`};
  };
  const needHostPath = (c, wanted, what, {writable = false, samePath = true} = {}) => {
    const found = hostMountOf(c, wanted, samePath);
    if (found.error) return fail(`container ${c.name}, ${what}: ${found.error}`);
    if (writable && found.mount.readOnly)
      fail(`container ${c.name}, ${what}: ${wanted} is mounted read-only`);
    return found;
  };
  for (const c of containers) {
    for (const mount of c.volumeMounts ?? [])
      if (!volumes.has(mount.name)) fail(`container ${c.name} mounts undefined volume ${mount.name}`);
  }
  for (const volume of volumes.values()) {
    if (volume.configMap && volume.configMap.name !== configMap.metadata.name)
      fail(`volume ${volume.name} names ConfigMap ${volume.configMap.name}, which no manifest defines`);
  }

  const daemon = container('agileosd');
  const plugin = container('device-plugin');
  if (!daemon || !plugin) return fail('DaemonSet needs the containers agileosd and device-plugin');
  // The daemon reads the ConfigMap's agileosd.json.
  const configFile = flagValue(commandOf(daemon), '--config');
  const configMount = (daemon.volumeMounts ?? []).find((m) => volumes.get(m.name)?.configMap);
  if (!configMount || configFile !== path.posix.join(configMount.mountPath, 'agileosd.json'))
    fail(`agileosd --config ${configFile} is not the ConfigMap's agileosd.json`);
  needHostPath(daemon, path.posix.dirname(socketPath), 'socket_path\'s directory', {writable: true});
  needHostPath(daemon, runtimeDir, 'runtime_dir', {writable: true});
  if (!daemon.securityContext?.privileged) fail('agileosd must be privileged (device nodes, worker uids)');
  for (const probe of [daemon.readinessProbe, daemon.livenessProbe]) {
    const command = probe?.exec?.command;
    if (!command) {
      fail('agileosd needs an exec readiness and liveness probe');
      continue;
    }
    if (command.includes('--check-daemon') && flagValue(command, '--daemon-socket') !== socketPath)
      fail(`agileosd's probe checks ${flagValue(command, '--daemon-socket')}, not socket_path ${socketPath}`);
  }

  // The plugin's flags against the configuration and the mounts.
  const pluginCommand = commandOf(plugin);
  const expect = (flag, wanted) => {
    const value = flagValue(pluginCommand, flag);
    if (String(value) !== String(wanted)) fail(`device-plugin ${flag} is ${value}, expected ${wanted}`);
  };
  expect('--daemon-socket', socketPath);
  expect('--runtime-dir', runtimeDir);
  expect('--slots', maxWorkers);
  expect('--device', device);
  const pluginDir = flagValue(pluginCommand, '--plugin-dir') ?? '/var/lib/kubelet/device-plugins';
  const kubeletDir = needHostPath(plugin, pluginDir, '--plugin-dir', {writable: true, samePath: false});
  if (kubeletDir && path.posix.basename(normal(kubeletDir.volume.hostPath.path)) !== 'device-plugins')
    fail(`device-plugin --plugin-dir is mounted from ${
        kubeletDir.volume.hostPath.path}, not a kubelet's device-plugins directory`);
  needHostPath(plugin, socketPath, '--daemon-socket');
  const shimDir = flagValue(pluginCommand, '--shim-dir') ?? '/usr/local/lib/agileos/shim';
  needHostPath(plugin, shimDir, '--shim-dir');
  const installer = (pod.initContainers ?? []).find((c) => c.name === 'install-shims');
  if (!installer)
    fail('DaemonSet has no install-shims init container');
  else
    needHostPath(installer, shimDir, 'the shim directory it fills', {writable: true});

  // Pods outside the DaemonSet: the clients. They ask for the plugin's resource and nothing that
  // reaches the GPU or the host.
  const clients = documents.filter((d) => d.object.kind === 'Pod');
  if (clients.length === 0) fail('no example Pod');
  for (const {file, object} of clients) {
    const spec = object.spec;
    const asks = spec.containers.some((c) => Number(c.resources?.limits?.[resourceName]) >= 1);
    if (!asks) fail(`${file}: Pod ${object.metadata.name} asks for no ${resourceName} (resources.limits)`);
    for (const c of spec.containers) {
      for (const key of Object.keys(c.resources?.limits ?? {}))
        if (key.includes('gpu') && key !== resourceName)
          fail(`${file}: container ${c.name} asks for ${key}, not ${resourceName}`);
      if (c.securityContext?.privileged) fail(`${file}: container ${c.name} is privileged`);
      if ((c.volumeDevices ?? []).length) fail(`${file}: container ${c.name} has volumeDevices`);
    }
    for (const volume of spec.volumes ?? [])
      if (volume.hostPath) fail(`${file}: volume ${volume.name} is a hostPath`);
    if (spec.hostPID || spec.hostIPC || spec.hostNetwork) fail(`${file}: Pod shares a host namespace`);
    if (!spec.securityContext?.runAsNonRoot) fail(`${file}: Pod does not set runAsNonRoot`);
  }
}

async function check(documents, parseErrors = []) {
  const errors = [...parseErrors];
  await validateSchemas(documents, errors);
  checkReferences(documents, errors);
  return errors;
}

// Copies of the manifests with one defect each; every one must be rejected, for its own reason
// (the regular expression an error must match), not for another the copy happens to have.
const breakages = [
  [
    'an image that is not a string', /image must be string/,
    (d) => {
      find(d, 'DaemonSet').spec.template.spec.containers[0].image = 7;
    }
  ],
  [
    'a DaemonSet without its selector', /required property selector/,
    (d) => {
      delete find(d, 'DaemonSet').spec.selector;
    }
  ],
  [
    'a hostPath type outside the enum', /hostPath\/type must be equal to one of the allowed values/,
    (d) => {
      find(d, 'DaemonSet').spec.template.spec.volumes.find((v) => v.hostPath).hostPath.type = 'Dir';
    }
  ],
  [
    'a probe period that is not an integer', /periodSeconds must be integer/,
    (d) => {
      find(d, 'DaemonSet').spec.template.spec.containers[0].readinessProbe.periodSeconds = 'often';
    }
  ],
  [
    'an unknown kind', /no Kubernetes API schema .*ServiceAcount/,
    (d) => {
      find(d, 'ServiceAccount').kind = 'ServiceAcount';
    }
  ],
  [
    'the pod asking for another resource', /asks for no agileos\.io\/gpu/,
    (d) => {
      const limits = find(d, 'Pod').spec.containers[0].resources.limits;
      for (const key of Object.keys(limits)) delete limits[key];
      limits['nvidia.com/gpu'] = 1;
    }
  ],
  [
    'the plugin watching another daemon socket', /--daemon-socket is \/run\/other/,
    (d) => {
      const plugin =
          find(d, 'DaemonSet').spec.template.spec.containers.find((c) => c.name === 'device-plugin');
      plugin.command = plugin.command.map(
          (a) => (a.startsWith('--daemon-socket=') ? '--daemon-socket=/run/other/agileosd.sock' : a));
    }
  ],
  [
    'the configuration moving the socket away from the mounts',
    /\/var\/run\/agileos-elsewhere is not mounted/,
    (d) => {
      const configMap = find(d, 'ConfigMap');
      const config = JSON.parse(configMap.data['agileosd.json']);
      config.socket_path = '/var/run/agileos-elsewhere/agileosd.sock';
      configMap.data['agileosd.json'] = JSON.stringify(config);
    }
  ],
  [
    'a configuration key agileosd does not know (with --agileosd)', /worker\.max_worker: unknown key/,
    (d) => {
      const configMap = find(d, 'ConfigMap');
      const config = JSON.parse(configMap.data['agileosd.json']);
      config.worker.max_worker = 4;
      configMap.data['agileosd.json'] = JSON.stringify(config);
    },
    {needsDaemon: true}
  ],
  [
    'more slots than workers', /--slots is 64, expected 4/,
    (d) => {
      const plugin =
          find(d, 'DaemonSet').spec.template.spec.containers.find((c) => c.name === 'device-plugin');
      plugin.command = plugin.command.map((a) => (a.startsWith('--slots=') ? '--slots=64' : a));
    }
  ],
  [
    'the run directory mounted at another path than the host\'s',
    /host \/var\/run\/agileos-host is mounted at \/run\/agileos, not at the same path/,
    (d) => {
      find(d, 'DaemonSet').spec.template.spec.volumes.find((v) => v.name === 'run').hostPath.path =
          '/var/run/agileos-host';
    }
  ],
  [
    'the kubelet directory from another host path', /not a kubelet's device-plugins directory/,
    (d) => {
      find(d, 'DaemonSet').spec.template.spec.volumes.find((v) => v.name === 'device-plugins').hostPath.path =
          '/var/lib/kubelet/plugins';
    }
  ],
  [
    'a privileged example pod', /container vectoradd is privileged/,
    (d) => {
      find(d, 'Pod').spec.containers[0].securityContext.privileged = true;
    }
  ],
  [
    'an example pod with a hostPath', /volume dev is a hostPath/,
    (d) => {
      find(d, 'Pod').spec.volumes = [{name: 'dev', hostPath: {path: '/dev'}}];
    }
  ],
  [
    'a ServiceAccount the DaemonSet names but no manifest defines',
    /ServiceAccount nobody, which no manifest defines/,
    (d) => {
      find(d, 'DaemonSet').spec.template.spec.serviceAccountName = 'nobody';
    }
  ],
];

const parseErrors = [];
const documents = loadManifests(manifestDir, parseErrors);
console.log(`${documents.length} documents in ${manifestDir}`);
const errors = await check(documents, parseErrors);
for (const error of errors) console.log(`FAIL: ${error}`);
let failed = errors.length;
if (args.includes('--self-test')) {
  // The checker on YAML it cannot parse, then on each broken copy.
  const scratch = fs.mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'agileos-k8s-'));
  try {
    fs.writeFileSync(path.join(scratch, 'bad.yaml'), 'kind: Pod\nkind: Pod\nmetadata: [\n');
    const yamlErrors = [];
    loadManifests(scratch, yamlErrors);
    if (yamlErrors.length === 0) {
      console.log('FAIL: self-test: malformed YAML (a duplicated key, an unclosed list) was accepted');
      ++failed;
    } else
      console.log('PASS: self-test: malformed YAML is rejected');
  } finally {
    fs.rmSync(scratch, {recursive: true, force: true});
  }
  for (const [what, reason, breakIt, {needsDaemon = false} = {}] of breakages) {
    if (needsDaemon && !agileosd) {
      console.log(`SKIP: self-test: ${what}: no --agileosd given`);
      continue;
    }
    const copy = structuredClone(documents);
    breakIt(copy);
    const found = await check(copy);
    const why = found.find((error) => reason.test(error));
    if (!why) {
      console.log(`FAIL: self-test: ${what} was not rejected for it (${
          found.length ? found.join('; ') : 'accepted'})`);
      ++failed;
    } else
      console.log(`PASS: self-test: ${what} is rejected (${why})`);
  }
}
console.log(failed === 0 ? 'manifests OK' : `${failed} problem(s)`);
process.exit(failed === 0 ? 0 : 1);
