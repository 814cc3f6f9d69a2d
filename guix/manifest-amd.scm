;;; guix/manifest-amd.scm -- oclsci on AMD GPUs through ROCm (PlaFRIM enbata).
;;;
;;;   PYOPENCL_CTX='0:0' guix time-machine -C guix/channels.scm -- \
;;;     shell --pure --preserve='^PYOPENCL_CTX$' -m guix/manifest-amd.scm -- oclsci jacobi
;;;
;;; rocm-opencl-runtime installs etc/OpenCL/vendors/amdocl64.icd; with no other
;;; ICD in the profile, platform 0 is ROCm.  The kernel driver (amdgpu, /dev/kfd)
;;; is the host's.  See guix/manifest.scm for the list of variants.

(use-modules (guix profiles)
             (guix utils)                     ;current-source-directory
             (gnu packages))                  ;specifications->manifest

(define %oclsci
  ;; The oclsci package built from this checkout (guix/oclsci.scm).
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
          ;; OpenCL implementation: ROCm, on AMD GPUs.
          "rocm-opencl-runtime"
          ;; Diagnostics (`clinfo -l') and basic commands under --pure.
          "clinfo"
          "coreutils"))))
