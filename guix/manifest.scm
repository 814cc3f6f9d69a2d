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
;;; docs/guix.md has the command lines; tests/tools/test_guix.py checks the names.

(use-modules (guix profiles)
             (guix packages)                  ;package-propagated-inputs
             (guix utils)                     ;current-source-directory
             (gnu packages)                   ;specification->package
             ((gnu packages python) #:select (python)))

(define %oclsci
  ;; The oclsci package built from this checkout (guix/oclsci.scm): provides
  ;; the `oclsci' command and propagates the Python libraries it needs.
  (load (string-append (current-source-directory) "/oclsci.scm")))

(packages->manifest
 (append
  ;; oclsci, the interpreter, and what oclsci needs at run time: the very
  ;; packages it propagates (python-pyopencl, the python-numpy and python-mako
  ;; that python-pyopencl propagates, python-click, python-pillow), never
  ;; "python-numpy" by name, which is the newest of several NumPys and would
  ;; collide with python-pyopencl's (guix/check.sh catches that).
  (list %oclsci python)
  (map cadr (package-propagated-inputs %oclsci))
  (map specification->package
       '(;; OpenCL implementation: PoCL, on the CPU.
         "pocl"
         ;; Diagnostics (`clinfo -l') and basic commands under --pure.
         "clinfo"
         "coreutils"))))
