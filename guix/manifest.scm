;;; guix/manifest.scm -- oclsci on CPUs through PoCL.  The default variant.
;;;
;;;   guix time-machine -C guix/channels.scm -- shell --pure -m guix/manifest.scm -- oclsci --help
;;;
;;; Variants (one OpenCL implementation each; pick exactly one of them):
;;;   guix/manifest.scm         CPU: PoCL                      (this file)
;;;   guix/manifest-amd.scm     AMD GPUs: rocm-opencl-runtime  (PlaFRIM enbata)
;;;   guix/manifest-nvidia.scm  NVIDIA GPUs: the host's driver (PlaFRIM sirocco)
;;; Add-ons, to combine with one variant by repeating -m:
;;;   guix/manifest-mpi.scm     openmpi, python-mpi4py
;;;   guix/manifest-dev.scm     pytest, hypothesis, hatchling, ...
;;; docs/guix.md has the command lines; tests/test_guix.py checks the names.

(use-modules (guix profiles)
             (guix utils)                     ;current-source-directory
             (gnu packages))                  ;specifications->manifest

(define %oclsci
  ;; The oclsci package built from this checkout: provides the `oclsci'
  ;; command and propagates the Python libraries listed below.
  (load (string-append (current-source-directory) "/oclsci.scm")))

(concatenate-manifests
 (list (packages->manifest (list %oclsci))
       (specifications->manifest
        '(;; What oclsci needs at run time (main channel).
          "python"
          "python-pyopencl"
          "python-numpy"
          "python-mako"
          "python-click"
          "python-pillow"
          ;; OpenCL implementation: PoCL, on the CPU.
          "pocl"
          ;; Diagnostics (`clinfo -l') and basic commands under --pure.
          "clinfo"
          "coreutils"))))
