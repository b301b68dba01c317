import path from 'node:path';
import t from 'tap';
import type { Test } from 'tap';
import { deployDir, deployTools, run } from '../harness/deploy-tools.js';

/**
 * deploy/helm/dris: `helm lint --strict` and `helm template` pass; every rendered object decodes
 * strictly into the Kubernetes API types (dris-deploy-check kube), and the objects are what an
 * operator needs: a Deployment per role with ops-port probes, the migration hook Job, ConfigMap and
 * Secret, PodDisruptionBudgets, the api HPA, Services, the ServiceMonitor behind its value.
 */

const chart = path.join(deployDir, 'helm', 'dris');
const ciValues = path.join(chart, 'ci', 'ci-values.yaml');

interface KubeDoc {
  apiVersion: string;
  kind: string;
  name: string;
  object: Record<string, unknown> & { metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> } };
}

interface Container {
  name: string;
  image: string;
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports?: { name: string; containerPort: number }[];
  startupProbe?: { httpGet: { path: string; port: string } };
  livenessProbe?: { httpGet: { path: string; port: string } };
  readinessProbe?: { httpGet: { path: string; port: string } };
  securityContext?: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean };
}

interface PodSpec {
  containers: Container[];
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  terminationGracePeriodSeconds?: number;
  restartPolicy?: string;
}

interface Workload {
  spec: {
    replicas?: number;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
  };
}

/** `helm template` with the CI values (and extra flags), decoded strictly. */
async function render(t: Test, extra: readonly string[] = []): Promise<KubeDoc[]> {
  const { helm, deployCheck } = deployTools();
  const tpl = await run(helm, ['template', 'prod', chart, '--namespace', 'dris', '-f', ciValues, ...extra]);
  t.equal(tpl.code, 0, tpl.stderr);
  const decoded = await run(deployCheck, ['kube', '-'], { input: tpl.stdout });
  t.equal(decoded.code, 0, decoded.stderr);
  return JSON.parse(decoded.stdout) as KubeDoc[];
}

function find(docs: KubeDoc[], kind: string, name: string): KubeDoc {
  const d = docs.find((x) => x.kind === kind && x.name === name);
  if (d === undefined) throw new Error(`no ${kind} ${name}`);
  return d;
}

void t.test('helm lint --strict passes with the CI values and with the defaults', async (t) => {
  const { helm } = deployTools();
  const withValues = await run(helm, ['lint', '--strict', chart, '-f', ciValues]);
  t.equal(withValues.code, 0, withValues.stdout + withValues.stderr);
  t.match(withValues.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  const defaults = await run(helm, ['lint', '--strict', chart]);
  t.equal(defaults.code, 0, defaults.stdout + defaults.stderr);
});

void t.test('helm template renders objects that decode strictly, for every role', async (t) => {
  const docs = await render(t);
  const kinds = docs.map((d) => `${d.kind}/${d.name}`).sort();
  t.same(kinds, [
    'ConfigMap/prod-dris',
    'Deployment/prod-dris-anchorer',
    'Deployment/prod-dris-api',
    'Deployment/prod-dris-indexer',
    'HorizontalPodAutoscaler/prod-dris-api',
    'Job/prod-dris-migrate',
    'PodDisruptionBudget/prod-dris-anchorer',
    'PodDisruptionBudget/prod-dris-api',
    'PodDisruptionBudget/prod-dris-indexer',
    'Secret/prod-dris',
    'Secret/prod-dris-migrate',
    'Service/prod-dris-admin',
    'Service/prod-dris-anchorer-ops',
    'Service/prod-dris-api',
    'Service/prod-dris-api-ops',
    'Service/prod-dris-indexer-ops',
    'ServiceAccount/prod-dris',
    'ServiceMonitor/prod-dris',
  ]);

  const config = find(docs, 'ConfigMap', 'prod-dris').object as unknown as { data: Record<string, string> };
  t.equal(config.data['EVM_RPC_URL'], 'https://rpc.example.org');
  t.equal(config.data['DRIS_OPS_PORT'], '9464');
  t.equal(config.data['NATS_REPLICAS'], '3');
  t.equal(config.data['DRIS_BATCH_MAX_RECORDS'], '1000', 'extra configuration passed through');
  for (const secretKey of ['DRIS_ANCHORER_KEY', 'DRIS_ADMIN_TOKEN', 'NATS_PASSWORD', 'REDIS_PASSWORD', 'CLICKHOUSE_PASSWORD']) {
    t.equal(config.data[secretKey], undefined, `${secretKey} is not in the ConfigMap`);
  }
  const secret = find(docs, 'Secret', 'prod-dris').object as unknown as { data: Record<string, string> };
  t.equal(Buffer.from(secret.data['DRIS_ADMIN_TOKEN'] ?? '', 'base64').toString(), 'ci-admin-token-0123456789abcdefghijklmnop');

  for (const role of ['api', 'indexer', 'anchorer']) {
    const dep = find(docs, 'Deployment', `prod-dris-${role}`).object as unknown as Workload;
    const pod = dep.spec.template;
    for (const [k, v] of Object.entries(dep.spec.selector.matchLabels)) t.equal(pod.metadata.labels[k], v, `${role}: selector matches the pod`);
    const c = pod.spec.containers[0];
    t.equal(c?.image, 'registry.example.org/dris:0.1.0');
    t.same(c?.args, ['serve']);
    t.equal(c?.env?.find((e) => e.name === 'DRIS_ROLES')?.value, role);
    const key = c?.env?.find((e) => e.name === 'DRIS_ANCHORER_KEY');
    if (role === 'anchorer') t.equal(key, undefined, 'the anchorer takes its key from the Secret');
    else t.same(key, { name: 'DRIS_ANCHORER_KEY', value: '' }, `${role}: the signing key blanked, it never signs`);
    t.same(
      c?.envFrom?.map((e) => e.configMapRef?.name ?? e.secretRef?.name),
      ['prod-dris', 'prod-dris'],
      'ConfigMap and Secret',
    );
    t.same(c?.ports?.find((p) => p.name === 'ops')?.containerPort, 9464);
    t.same(c?.startupProbe?.httpGet, { path: '/livez', port: 'ops' });
    t.same(c?.livenessProbe?.httpGet, { path: '/livez', port: 'ops' });
    t.same(c?.readinessProbe?.httpGet, { path: '/readyz', port: 'ops' });
    t.equal(pod.spec.securityContext?.runAsNonRoot, true);
    t.equal(pod.spec.securityContext?.runAsUser, 10001);
    t.equal(c?.securityContext?.readOnlyRootFilesystem, true);
    t.equal(c?.securityContext?.allowPrivilegeEscalation, false);
    t.equal(pod.spec.terminationGracePeriodSeconds, 45);
    const pdb = find(docs, 'PodDisruptionBudget', `prod-dris-${role}`).object as unknown as { spec: { maxUnavailable: number; selector: { matchLabels: Record<string, string> } } };
    t.same(pdb.spec.selector.matchLabels, dep.spec.selector.matchLabels, `${role}: the PDB covers the Deployment`);
    t.equal(pdb.spec.maxUnavailable, 1);
    const ops = find(docs, 'Service', `prod-dris-${role}-ops`).object as unknown as { spec: { selector: Record<string, string>; ports: { name: string; port: number }[] } };
    t.same(ops.spec.selector, dep.spec.selector.matchLabels, `${role}: ops Service selects its pods`);
  }
  const api = find(docs, 'Deployment', 'prod-dris-api').object as unknown as Workload;
  t.equal(api.spec.replicas, undefined, 'the HPA owns the api replica count');
  t.same(
    api.spec.template.spec.containers[0]?.ports?.map((p) => p.name),
    ['http', 'admin', 'ops'],
  );
  t.equal((find(docs, 'Deployment', 'prod-dris-indexer').object as unknown as Workload).spec.replicas, 2);
  const hpa = find(docs, 'HorizontalPodAutoscaler', 'prod-dris-api').object as unknown as { spec: { scaleTargetRef: { kind: string; name: string }; minReplicas: number } };
  t.same(hpa.spec.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: 'prod-dris-api' });
  t.equal(hpa.spec.minReplicas, 2);
  const admin = find(docs, 'Service', 'prod-dris-admin').object as unknown as { spec: { type: string; ports: { targetPort: string }[] } };
  t.equal(admin.spec.type, 'ClusterIP', 'admin stays inside the cluster');
  t.equal(admin.spec.ports[0]?.targetPort, 'admin');

  const job = find(docs, 'Job', 'prod-dris-migrate');
  t.equal(job.object.metadata.annotations?.['helm.sh/hook'], 'pre-install,pre-upgrade');
  const jobSecret = find(docs, 'Secret', 'prod-dris-migrate');
  t.ok(
    Number(jobSecret.object.metadata.annotations?.['helm.sh/hook-weight']) < Number(job.object.metadata.annotations?.['helm.sh/hook-weight']),
    'the job secret exists before the job',
  );
  const jobPod = (job.object as unknown as Workload).spec.template.spec;
  t.same(jobPod.containers[0]?.args, ['migrate'], 'dris migrate');
  t.equal(jobPod.restartPolicy, 'Never');
  t.same(
    jobPod.containers[0]?.env?.filter((e) => e.name.startsWith('CLICKHOUSE_')).map((e) => e.name),
    ['CLICKHOUSE_URL', 'CLICKHOUSE_USER', 'CLICKHOUSE_DATABASE', 'CLICKHOUSE_PASSWORD'],
  );

  const sm = find(docs, 'ServiceMonitor', 'prod-dris').object as unknown as {
    metadata: { labels: Record<string, string> };
    spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string; path: string }[] };
  };
  t.equal(sm.metadata.labels['release'], 'kube-prometheus-stack');
  t.equal(sm.spec.endpoints[0]?.port, 'ops');
  t.equal(sm.spec.endpoints[0]?.path, '/metrics');
  const selected = docs.filter(
    (d) => d.kind === 'Service' && Object.entries(sm.spec.selector.matchLabels).every(([k, v]) => d.object.metadata.labels?.[k] === v),
  );
  t.same(
    selected.map((d) => d.name).sort(),
    ['prod-dris-anchorer-ops', 'prod-dris-api-ops', 'prod-dris-indexer-ops'],
    'the ServiceMonitor scrapes the ops Services of every role',
  );
});

void t.test('values switch objects off and on', async (t) => {
  const docs = await render(t, [
    '--set',
    'metrics.serviceMonitor.enabled=false',
    '--set',
    'api.autoscaling.enabled=false',
    '--set',
    'api.replicas=3',
    '--set',
    'migration.enabled=false',
    '--set',
    'secrets.existingSecret=dris-credentials',
  ]);
  t.notOk(docs.some((d) => d.kind === 'ServiceMonitor'), 'no ServiceMonitor without its value');
  t.notOk(docs.some((d) => d.kind === 'HorizontalPodAutoscaler'));
  t.notOk(docs.some((d) => d.kind === 'Job'));
  t.notOk(docs.some((d) => d.kind === 'Secret'), 'an existing Secret is used, none made');
  const api = find(docs, 'Deployment', 'prod-dris-api').object as unknown as Workload;
  t.equal(api.spec.replicas, 3);
  t.equal(api.spec.template.spec.containers[0]?.envFrom?.[1]?.secretRef?.name, 'dris-credentials');
});

void t.test('helm template refuses values it cannot default; the strict decoder refuses unknown fields', async (t) => {
  const { helm, deployCheck } = deployTools();
  for (const unset of ['chain.rpcUrl=', 'chain.contractAddress=0x12', 'secrets.anchorerKey=', 'secrets.adminToken=short']) {
    const r = await run(helm, ['template', 'prod', chart, '-f', ciValues, '--set', unset]);
    t.not(r.code, 0, `refused: ${unset}`);
  }
  const unknownField = 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replcas: 2\n  selector: {matchLabels: {a: b}}\n  template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]}}\n';
  t.equal((await run(deployCheck, ['kube', '-'], { input: unknownField })).code, 1);
  const wrongType = 'apiVersion: v1\nkind: Service\nmetadata:\n  name: x\nspec:\n  ports: [{port: "eighty"}]\n';
  t.equal((await run(deployCheck, ['kube', '-'], { input: wrongType })).code, 1);
});
