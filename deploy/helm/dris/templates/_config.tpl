{{/* The non-secret environment shared by every dris process (the ConfigMap's data). */}}
{{- define "dris.configData" -}}
HOST: "0.0.0.0"
PORT: {{ .Values.ports.http | quote }}
DRIS_ADMIN_HOST: "0.0.0.0"
DRIS_ADMIN_PORT: {{ .Values.ports.admin | quote }}
DRIS_OPS_HOST: "0.0.0.0"
DRIS_OPS_PORT: {{ .Values.ports.ops | quote }}
DRIS_DATA_DIR: /var/lib/dris
NATS_URL: {{ .Values.nats.url | quote }}
NATS_USER: {{ .Values.nats.user | quote }}
NATS_REPLICAS: {{ .Values.nats.replicas | quote }}
REDIS_URL: {{ .Values.redis.url | quote }}
REDIS_KEY_PREFIX: {{ .Values.redis.keyPrefix | quote }}
CLICKHOUSE_URL: {{ .Values.clickhouse.url | quote }}
CLICKHOUSE_USER: {{ .Values.clickhouse.user | quote }}
CLICKHOUSE_DATABASE: {{ .Values.clickhouse.database | quote }}
IPFS_API_URL: {{ .Values.ipfs.apiUrl | quote }}
{{- with .Values.ipfs.gatewayUrl }}
DRIS_IPFS_GATEWAY_URL: {{ . | quote }}
{{- end }}
EVM_RPC_URL: {{ .Values.chain.rpcUrl | quote }}
DRIS_CHAIN_ID: {{ .Values.chain.chainId | int64 | quote }}
DRIS_CONTRACT_ADDRESS: {{ .Values.chain.contractAddress | quote }}
DRIS_CONTRACT_DEPLOY_BLOCK: {{ .Values.chain.deployBlock | int64 | quote }}
DRIS_CONFIRMATIONS: {{ .Values.chain.confirmations | quote }}
{{- with .Values.chain.publicRpcUrl }}
DRIS_PUBLIC_RPC_URL: {{ . | quote }}
{{- end }}
{{- range $k, $v := .Values.config }}
{{ $k }}: {{ $v | toString | quote }}
{{- end }}
{{- end }}
