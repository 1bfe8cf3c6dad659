#!/usr/bin/env bash
# Build the image, start a kind cluster, load the image, deploy policy-scheduler and the examples.
# Needs docker, kind and kubectl. Re-running reuses the cluster. Remove it with:
#   kind delete cluster --name policy-scheduler
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CLUSTER="${CLUSTER:-policy-scheduler}"
IMAGE="${IMAGE:-policy-scheduler:0.1.0}"  # the tag manifests/deployment.yaml uses

for tool in docker kind kubectl; do
  command -v "$tool" >/dev/null || { echo "error: $tool is not installed" >&2; exit 1; }
done

docker build -t "$IMAGE" "$ROOT"

if ! kind get clusters | grep -qx "$CLUSTER"; then
  kind create cluster --name "$CLUSTER" --config "$ROOT/e2e/kind/kind-config.yaml"
fi
kubectl config use-context "kind-$CLUSTER"
kind load docker-image "$IMAGE" --name "$CLUSTER"

# CRDs, namespace, RBAC, Deployment. The CRDs must be established before any CR is applied.
kubectl apply -k "$ROOT/manifests"
kubectl wait --for=condition=Established --timeout=60s \
  crd/schedulingprofiles.scheduling.policy-scheduler.io \
  crd/evictionpolicies.scheduling.policy-scheduler.io \
  crd/priorityclassmirrors.scheduling.policy-scheduler.io
kubectl -n policy-scheduler rollout restart deployment/policy-scheduler  # pick up a rebuilt image
kubectl -n policy-scheduler rollout status deployment/policy-scheduler --timeout=180s

# Policy first (profiles, eviction policies, priority mirrors), then the workloads using it.
kubectl apply -f "$ROOT/examples/"
kubectl wait --for=condition=Synced --timeout=60s priorityclassmirrors --all
kubectl apply -f "$ROOT/examples/workloads/"

kubectl get schedulingprofiles,evictionpolicies,priorityclassmirrors
kubectl get pods -n policy-scheduler-examples -o wide
