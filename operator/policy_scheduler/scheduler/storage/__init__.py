"""Storage objects (PV, PVC, StorageClass, CSI) the volume plugins read, and their lister.

Kept empty on purpose: model.py imports storage.volumes, which must not pull in modules that
import model back.
"""
