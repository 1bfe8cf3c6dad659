# syntax=docker/dockerfile:1
# policy-scheduler image: `docker build -t policy-scheduler:0.1.0 .`
# Builder: the project's wheel plus wheels of all its dependencies. Final: those wheels
# installed into a slim Python with no compiler, no pip cache, no source tree.

FROM python:3.11-slim AS builder
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml ./
COPY operator ./operator
# Developer-only code (local control plane, parity against kube-scheduler, benchmarks, the
# demo) is not shipped: the CLI reports those commands as unavailable. Keep this list in step
# with cli.DEV_MODULES and tests/deploy/test_dockerfile.py.
RUN rm -rf operator/policy_scheduler/devcluster \
           operator/policy_scheduler/parity \
           operator/policy_scheduler/bench \
           operator/policy_scheduler/bench_e2e \
           operator/*.egg-info \
 && pip wheel --wheel-dir /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOME=/tmp
# Offline install from the builder's wheels only; the wheels are mounted, not copied, so they
# are not left in a layer.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-index --find-links=/wheels policy-scheduler
# A passwd entry for the numeric user: kopf derives an identity from getpass.getuser(), which
# fails for a uid without one; USER covers a different uid forced by the cluster (e.g. OpenShift).
RUN groupadd --system --gid 65532 nonroot \
 && useradd --system --uid 65532 --gid 65532 --home-dir /tmp --no-create-home --shell /usr/sbin/nologin nonroot
ENV USER=nonroot
# Numeric, so Kubernetes can check runAsNonRoot; it owns nothing: the root filesystem may be
# read-only and only /tmp (an emptyDir in manifests/deployment.yaml) is written.
USER 65532:65532
WORKDIR /tmp
EXPOSE 10259
ENTRYPOINT ["policy-scheduler"]
CMD ["run"]
