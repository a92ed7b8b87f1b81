#!/usr/bin/env bash
# install_dra_driver_cpu.sh: kubevirtci's drop-in for cluster-up/cluster/dra-cpu/install_dra_driver_cpu.sh.
#
# Installs dra-driver-cpu with the kubevirtci.dra_cpu collection, on a host that has bash and
# python3 (>= 3.11) but no Ansible. The same switch and environment as the shell installer:
#   KUBEVIRT_USE_DRA_CPU   anything but exactly `true` exits 0 at once (no python, pip or network)
#   KUBEVIRT_PROVIDER      required; the kubeconfig is $KUBEVIRTCI_CONFIG_PATH/$KUBEVIRT_PROVIDER/.kubeconfig
#   KUBEVIRTCI_CONFIG_PATH default <kubevirtci>/_ci-configs (three directories above this script)
#   DRA_CPU_RESERVED_CPUS DRA_CPU_GROUP_BY DRA_CPU_CHART DRA_CPU_CHART_VERSION DRA_CPU_RELEASE_NAME
#   DRA_CPU_DRIVER_NAMESPACE HELM_VERSION KUBEVIRT_NUM_VCPU KUBEVIRT_NUM_NUMA_NODES: read by the role
# and two of its own:
#   DRA_CPU_COLLECTION     the collection to run: a tarball path or a Galaxy name:version
#                          (default: kubevirtci.dra_cpu at the version this script was shipped with)
#   DRA_CPU_PYTHON         the interpreter of the private environment (default: python3)
# Arguments are passed on to ansible-playbook; its exit code is this script's.
#
# On first use it builds a private Python environment under $KUBEVIRTCI_CONFIG_PATH/.tools/ (one
# directory per pinned version set and interpreter, built under a lock, so two lanes starting at once
# build it once) from the hash-pinned lock below, takes kubernetes.core from the pinned `ansible`
# bundle wheel, and installs the collection. Later runs reuse it without any pip or galaxy call.
# Everything it writes (Ansible's home and temp, TMPDIR, helm's cache, config, data and discovery cache,
# the helm download) stays under .tools/; PATH, HOME and the system Python are left as they are.
set -euo pipefail

SHIPPED_VERSION=0.1.0   # galaxy.yml's version (tests/unit/scripts/test_installer_script.py)
say() { printf '[install_dra_driver_cpu] %s\n' "$*"; }
die() { local rc=$1; shift; printf '[install_dra_driver_cpu] ERROR: %s\n' "$*" >&2; exit "$rc"; }

if [ "${KUBEVIRT_USE_DRA_CPU:-}" != "true" ]; then
  say "KUBEVIRT_USE_DRA_CPU is not 'true' (it is '${KUBEVIRT_USE_DRA_CPU:-}'): not installing dra-driver-cpu"
  exit 0
fi

[ -n "${KUBEVIRT_PROVIDER:-}" ] || die 2 "KUBEVIRT_PROVIDER is not set: name the kubevirtci provider (for example k8s-1.37); the kubeconfig is read from \$KUBEVIRTCI_CONFIG_PATH/\$KUBEVIRT_PROVIDER/.kubeconfig"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export KUBEVIRTCI_CONFIG_PATH=${KUBEVIRTCI_CONFIG_PATH:-$here/../../../_ci-configs}
tools=$KUBEVIRTCI_CONFIG_PATH/.tools

py=${DRA_CPU_PYTHON:-python3}
command -v "$py" >/dev/null 2>&1 || die 2 "DRA_CPU_PYTHON='$py': no such interpreter on PATH ($PATH)"
pyver=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3]); sys.exit(sys.version_info < (3, 11))') \
  || die 2 "DRA_CPU_PYTHON='$py' is Python ${pyver:-?}; ansible-core 2.19 needs 3.11 or newer: set DRA_CPU_PYTHON to one"

collection=${DRA_CPU_COLLECTION:-kubevirtci.dra_cpu:$SHIPPED_VERSION}
if [ -f "$collection" ]; then
  collection=$(cd "$(dirname "$collection")" && pwd)/$(basename "$collection")
  collection_id="file $(sha256sum "$collection" | cut -d' ' -f1)"
elif [[ $collection =~ ^[a-z0-9_]+\.[a-z0-9_]+(:[0-9A-Za-z.+-]+)?$ ]]; then
  collection_id="galaxy $collection"
else
  die 2 "DRA_CPU_COLLECTION='$collection' is neither a collection tarball (no such file) nor a Galaxy name:version such as kubevirtci.dra_cpu:$SHIPPED_VERSION"
fi

# BEGIN LOCK (hack/installer_lock.py)
# what `pip install --require-hashes` installs into the private environment
requirements_lock() {
  cat <<'LOCK'
aiohappyeyeballs==2.7.1 \
    --hash=sha256:9243213661e29250eb41368e5daa826fc017156c3b8a11440826b2e3ed376472
aiohttp==3.14.5 \
    --hash=sha256:1eb8167961ec4dfcc8cb9dd50bd0ee72519f7ef496be95203e49e27b01618382 \
    --hash=sha256:1ffa3a523a36d8628f98c06492ae16a31a23d14c0b4ec721757b477319f656d6 \
    --hash=sha256:20f085697d7e911f1f73c43ed03fafbed1e7121797e2eb5428efa80398060584 \
    --hash=sha256:32e8fa6644e541fcd7e02430588c7fc93b602c1778ea0bc345505db76b61cfb4 \
    --hash=sha256:50a195903119008fe9cc68710535eb37f556ffffd6a7759afe70a2c145587045 \
    --hash=sha256:74efb69332b85675b1eabd760a8cfc2e2cf42c60607c66f88014c1bdfb40942d \
    --hash=sha256:94684b879ac1d71e4238850c99b62dc1b28d9086b156a2555f082010b85a865c \
    --hash=sha256:abfda5cb094a829f7bc25216a32f7db2e85cc65bd59910f8e7b40b3d9b224764 \
    --hash=sha256:efc21a454892828368b11c2c780de0ff8bc991f73f6b99c6b66e56205470929b
aiohttp-retry==2.9.1 \
    --hash=sha256:66d2759d1921838256a05a3f80ad7e724936f083e35be5abb5e16eed6be6dc54
aiosignal==1.4.0 \
    --hash=sha256:053243f8b92b990551949e63930a839ff0cf0b0ebbe0597b0f3fb19e1a0fe82e
annotated-types==0.8.0 \
    --hash=sha256:f072f4d804ea359e4eaf198b1af7a8b0943881a87f31bb764f8bf219bb9419e0
ansible-core==2.19.14 \
    --hash=sha256:d518d0e96fa75bedfe9b0a96d5b158aa712d092961824c115140c8677b88ff06
attrs==26.1.0 \
    --hash=sha256:c647aa4a12dfbad9333ca4e71fe62ddc36f4e63b2d260a37a8b83d2f043ac309
certifi==2026.10.19.post1 \
    --hash=sha256:1324c476b4811eff41a8bc2122cd0bbd4d9c7234c725446d99ab1612b3a7fdd2
cffi==2.1.1 ; platform_python_implementation != 'PyPy' \
    --hash=sha256:3311ed60d36f83378794e1009ac6258bafbf81f7888b4caa7b35a521e3f95813 \
    --hash=sha256:34e261f78cb6ceaaa36f42f2613f4380d94d9c759a9c73c769ee6e0247364632 \
    --hash=sha256:58acb8ab8e295e6c5ea12f888cbb13cf21511ef2a3303a23f4325c29d17fe5c1 \
    --hash=sha256:68e62fe11f30d5ca8289242866f0a5291402d8529ca2178ab8afc5c9694ae890 \
    --hash=sha256:a931079504ecc49efed7744c476a5c343a92fabf66dec2db95edb1b2fdc770e2 \
    --hash=sha256:b0431303acaea1089ad4b3e9ce4e6518193def1118d4073ca848635ee4ea2e96 \
    --hash=sha256:c1453022f490d2459a11819d83ad1d586e9ff65a12ac3e705ffebd46d3685dcf \
    --hash=sha256:f16c709686a78c727bbbf059f92b0bf41c6fc60deec706d2dc19f529175a6125
charset-normalizer==3.5.3 \
    --hash=sha256:26c6ad87bb79628954b52f8f7b9e18ab5cd9667546712ded9689fb7677e630d6 \
    --hash=sha256:2a6f937e0b70133d1f826d0a253331b6fe1a4c874808cc12e16f2fb8177042f4 \
    --hash=sha256:61e32fdbf56f4cd25a1efa451c8b5fe886fc5e00143ccaacafdf21f301fad059 \
    --hash=sha256:656b9744bac4493561d28b56d7d646afd7a8471254ef7004d849aa8368020037 \
    --hash=sha256:70f65dd0c2ed79ea2d9776096e9c7d25e398c2c03eb31877753598d201d91784 \
    --hash=sha256:90b1ff6cb9c7a204a3b79b1b0ed6ac8a1d8fed3b6dc69e50ae5de0f358ee81d4 \
    --hash=sha256:96e268b0cbda016ac519513294fcd17032264085b600abaac58b93049477e132 \
    --hash=sha256:d4e7ecaa25f0dae672ac783c2e5aa9054a62e011749d64ff47b887af360a3e82 \
    --hash=sha256:e5e4785d8a0adeadfbdf75f4efc357911842674651cbafd7e97f69b11ec3cbc6 \
    --hash=sha256:ee9de080e8d6221bbe4ba2667367b1cee0f47a53f60ffc5e431b698cd2f2b214 \
    --hash=sha256:fd0341b9dea133d187d7c5a2cd7e21ae6449a7b68ea8c2454f9cf77def11ec1b
cryptography==50.0.2 \
    --hash=sha256:0ddc924c04591c2811ca024d62ecad4f7f6f08af8939c211438f48a16bd23602 \
    --hash=sha256:1981f1db4630889b9ef7803fadef12b056f428cb6b85c27ba57b774793b6093c \
    --hash=sha256:4061c0079120205fb760c58acab6443e217307dcf05e3702cf970e0689972856 \
    --hash=sha256:630ebfea3bf689d075f82316324ff7433dc447fe6bc1bfc76524b74b4a9567d2 \
    --hash=sha256:79def8d059362e7831389ed3be0ecdf58a89386e1271e35dd9f5af84e81bffd0 \
    --hash=sha256:87e9ce85beb6b328ba370cc6e6aea483c92617b4c95b1d33a49297eb662bfb04 \
    --hash=sha256:9dab55f57c74c3cad24c323bacbbd04be4705ba6eb0d92e920b1fc4837ed5079 \
    --hash=sha256:c5e67125c7dca78d199ec4e116aa93dbb83494808ecbb8211a2cb09b1bf41dbd \
    --hash=sha256:dfe9763530994147d9af1def057a5b9658b00e8f8fe8743d144d1e0911c2e454 \
    --hash=sha256:ee247f5c245c9a2fe7c8e2214e295918838e44e00a45a6718451e4004219e767 \
    --hash=sha256:f21e8a22c8605750c7af886bab299a363721264061b4ac0a30efb73cfd58efc5 \
    --hash=sha256:f9f6143a8c75945eb960d9eb98905a441394abfa24afaae239d514ffb2586480
durationpy==0.11 \
    --hash=sha256:a739fe2b8972c250ff72f8e2c488d18cf25f7b852f49ee76048775d5171df30c
frozenlist==1.8.0 \
    --hash=sha256:0c18a16eab41e82c295618a77502e17b195883241c563b00f0aa5106fc4eaa0d \
    --hash=sha256:2552f44204b744fba866e573be4c1f9048d6a324dfe14475103fd51613eb1d1f \
    --hash=sha256:494a5952b1c597ba44e0e78113a7266e656b9794eec897b19ead706bd7074383 \
    --hash=sha256:778a11b15673f6f1df23d9586f83c4846c471a8af693a22e066508b77d201ec8 \
    --hash=sha256:957e7c38f250991e48a9a73e6423db1bb9dd14e722a10f6b8bb8e16a0f55f695 \
    --hash=sha256:96f423a119f4777a4a056b66ce11527366a8bb92f54e541ade21f2374433f6d4 \
    --hash=sha256:cba69cb73723c3f329622e34bdbf5ce1f80c21c290ff04256cff1cd3c2036ed2 \
    --hash=sha256:eaa352d7047a31d87dafcacbabe89df0aa506abb5b1b85a2fb91bc3faa02d822 \
    --hash=sha256:fb30f9626572a76dfe4293c7194a09fb1fe93ba94c7d4f720dfae3b646b45027
idna==3.20 \
    --hash=sha256:ab7ae7122974553370f0bdb919e1a960b2cd1bc1ef0276416d896db81c14582c
jinja2==3.1.6 \
    --hash=sha256:85ece4451f492d0c13c5dd7c13a64681a86afae63a5f347908daf103ce6d2f67
jsonpatch==1.47 \
    --hash=sha256:c9ba6de59c481bf2be05041514ecb0d97f994aa645c4e00831805dbe2281811a
jsonpointer==3.12 \
    --hash=sha256:89f391335ee2719ae72149e1bf30a4d4c7c5d92f15a3f53faa8d20cc7c6c7f19
kubernetes==37.0.2 \
    --hash=sha256:d72683392fc10f59fb78b89bd91cb3be60a05d6ff0bbb2150966a224af6edc03
markupsafe==3.0.4 \
    --hash=sha256:1caa2fa5a6184fb233153b35f654e6687bd555476f6170f29d8ee9be1a8b0af9 \
    --hash=sha256:434139499bb20b502ed3baa1f169e618f924a97e7a777fea1a49446d80106cf6 \
    --hash=sha256:6a45c3d514f2436064db00d7fc8778d888f0236ebfed649b53d13a59e69ad51b \
    --hash=sha256:6da83a088f8ef93b2d483a8232a4dbf4d69d3d8496b568a03c56becac43e1808 \
    --hash=sha256:7018d4af1cd272e847aa5917983ab5e83e4f6579f9dbfecd4a79c0ca80b144c2 \
    --hash=sha256:849dd2bb0e5e4ab2b71c7191726a4a8d5aa8a610daa584728cbee0b710ddc4ef \
    --hash=sha256:8e124f974786f831d6043728e38296969d3579db8896fe004682f5758e613581 \
    --hash=sha256:a8e9f292fcda89b324f2f5c91d13f1424a153e40fc2756f38ee23b15835ff300
multidict==7.2.1 \
    --hash=sha256:08ea94663d9e7c25d14d78222f7aee906c472d4837766bec62477c38f6e419dc \
    --hash=sha256:1fb8c1a3480c130c3a6422d5f16f3cad6552bf08c2089dd288ba7134649183b5 \
    --hash=sha256:295a15ccb8cfde9351dd6062b80af4e839460636b3c46813b4aa443905ded86a \
    --hash=sha256:335f715f8c111654f29e4bf19086bdf0245579d2b4f4f59ca8dd9b3003b859c1 \
    --hash=sha256:3b7542fad2706595c1b1853b46f2c3c4ae5cc5a6252b7225f294d607a29e1bdf \
    --hash=sha256:6efdeed2723431999cf3bcbc84c72dbe0f65d16bb1f84e15a657f5b60ff18ca6 \
    --hash=sha256:822a7fcd33f6922b650e1b26594f09d53c5d011fe655fea7ded27b2728ce2a1b \
    --hash=sha256:cd69c99affd1b4debc1f9a53058ea6e3a9b34f2e733840bb45891666cd8ede0a \
    --hash=sha256:fa0ecd064b0ae18d235283abb5adbc4e07304dba8f2aa7c0d61f28bebcc70d4c
oauthlib==4.0.1 \
    --hash=sha256:498a298876e996301950a5b053d12c31628bb7b895db03666430c69ce182eb61
packaging==26.4 \
    --hash=sha256:81383611a09c1bc0b08b76e0fd5829d7c6824c65b27a6aee339da133f4233ea2
propcache==0.5.4 \
    --hash=sha256:251c63dd46a0659bb875cb254dc4c1e79ee91a847c737cd62373295afc2235dc \
    --hash=sha256:2814ecd8e818f487bee4b0f921bc4d1c176cc5fc71ac0f072d0fa67eda4ac14b \
    --hash=sha256:60a64cbccaa11b7760ce705a14ada17ba459e7ca9f23ba587eb013821032d7ef \
    --hash=sha256:62530ca89187827e4a4fe733f971abe81a7542eeea48ff61995f19b64d7199c8 \
    --hash=sha256:62c60aec739ed00124573cce1178138fd690c7676352d67a37328c1cf51d7468 \
    --hash=sha256:6e9368e87a3efc285e559131092c5db643eb8e56de4ee42064d5baec22ef2bb5 \
    --hash=sha256:cc07876cfb079b6f6f36d21ce75784ad6c2c6b563eeac0ed26c2fa2669b85df9 \
    --hash=sha256:dbab5f5ff6897c81f355d079010cdae85b02e5a0b518b5251523b8ad8ae9ac3c \
    --hash=sha256:f85915e00dcb1cd9f2f890ead064ed40a27df06f0db65be427b29482ae357572
pycparser==3.12 ; implementation_name != 'PyPy' and platform_python_implementation != 'PyPy' \
    --hash=sha256:a076f3f489b39b43ed13563a1dafe42447445bec2e294154ec5c57fcdda4c85e
pydantic==2.14.4 \
    --hash=sha256:653a2ad9f6d8858529c77c72717d0ea991d6c6837fe683246b2f4b2bbfc3fadc
pydantic-core==2.50.5 \
    --hash=sha256:07a62d44515d674d750cfd86b7ce1dd93111be870f378d7c27b37aeb78d0cb4a \
    --hash=sha256:27bc22dc8d50335bc62296261a7dc4c2572149910ba7c274ef0f945b5be0d570 \
    --hash=sha256:470bbc2495367f60d3ca849a8039e4c164701d10637e7743f4427d92651bdb6d \
    --hash=sha256:488319076ec92908b91fc6265ce761f1d78748f69f85518564fd16bf333e1b70 \
    --hash=sha256:88b543705849d0c59343f97c38296dbf59eb7b3c9565bd4fe1ed638ba38da5ed \
    --hash=sha256:8bbe282e79dc71b24ba7be284eacf27c8ddff8f26911e2030a0dd123c6aed326 \
    --hash=sha256:ba2b34529984a8e3cb1bc62a7687617722695a2cb4e57958de32a0eba128a07a \
    --hash=sha256:cbfde3ad127786f1dea1a6cd89a5eb824a16203f24743ad2b4e07506f43bc844
python-dateutil==4.0.0 \
    --hash=sha256:a5e246f79eb80475e691bf93862cead98decd8a498cf53ba0516fcdc0f50dc1c
pyyaml==6.0.4 \
    --hash=sha256:41b4669c3a8fd5750e594dff59d3e62d40e321fec467b50449603710ed0a68f3 \
    --hash=sha256:45e37dd647db9d67b757444c74060c064ace5fdaa08f42bf4fda3812275d423e \
    --hash=sha256:50588147ab2c6a59b5f990a4905db80899a6c2bd197e046a6201f1e67587e794 \
    --hash=sha256:622aa875fa6533f25fedcffe23079357d65a690d462200afed5d8e9d0e01ebee \
    --hash=sha256:71bb5b87465d88d1dfc577115af6d435bff9b26f2512936f610c26aa55966028 \
    --hash=sha256:93bfb2459195406a518e2f487a9bbf01df240175f31e06f5a252ac6734c7bbf0 \
    --hash=sha256:c604dc2613c417130479cdd6e55c2faa691b6365aa82b3dafddfcecc2eaf1ac7 \
    --hash=sha256:ed9b957abb12f6ffcd92d5db32fa3ffd4e4a8423d80ddd51b4efa63b42f6a76b
requests==2.34.2 \
    --hash=sha256:2a0d60c172f83ac6ab31e4554906c0f3b3588d37b5cb939b1c061f4907e278e0
requests-oauthlib==2.0.0 \
    --hash=sha256:7dd8a5c40426b779b0868c404bdef9768deccf22749cde15852df527e6269b36
resolvelib==1.2.1 \
    --hash=sha256:fb06b66c8da04172d9e72a21d7d06186d8919e32ae5ab5cdf5b9d920be805ac2
typing-extensions==4.16.0 \
    --hash=sha256:481caa481374e813c1b176ada14e97f1f67a4539ce9cfeb3f350d78d6370c2e8
typing-inspection==0.4.5 \
    --hash=sha256:bc210535442b39e1bf2805e0c7a17dfd6a4ace760c84c7f7d16245d23a6b1c39
tzdata==2026.6 \
    --hash=sha256:0a10eec6e13ef16b627fabed9a5f2ba61a62b1c67f327305f4e7e412a70b4aec
urllib3==2.8.0 \
    --hash=sha256:0cf3cae568d36aa9576b28dfb35f11328f1cb974ca7647d9475ebb86c75ac6e3
websocket-client==1.9.2 \
    --hash=sha256:e1a673830a9c7bfa47b1cd3d5e4178f4c9651d80a4eab02c9c23a1c3ec6250ce
yarl==1.25.1 \
    --hash=sha256:14b79a30a93a3ce2e8832603fd0ab780ada281b0ba5110b519a634f2d7d7d1fc \
    --hash=sha256:30eec96e8a91bd588ce897c9543f6d5d8d34b28fbcba28a4dedf20ebeae9fe57 \
    --hash=sha256:4d781294bb815ecb5ea57ff6bbf8038e0a31a95fdf3e1788f66e0dc100d64b58 \
    --hash=sha256:681c758b0490f9e96b78e5fa8e8dc6e648e9185bb6eaebe73183c33ea0c445f3 \
    --hash=sha256:77e5099b99b37f3cf79c246998ca9f7313a78054cd1809ec46bc1afad47e1c4c \
    --hash=sha256:acae6b45d1ace09b6ba3876da43b88366ef368f73b988c7f57e14231753d4420 \
    --hash=sha256:be80550d9bfe83d9b62398a37081a90434e6df2d978ec345c3d2820de6beddab \
    --hash=sha256:c6f117789d22dce188e5754e8bc65b7e6ebf8cb73963b9fa761f672a5883769d \
    --hash=sha256:d5add7b4ca7afeea91d52e4d4e4db3b1fe9885b71f07054560d8c4296b7441a2
LOCK
}
# kubernetes.core: the ansible bundle's copy (`pip download`, then only that collection unpacked)
bundle_lock() {
  cat <<'LOCK'
ansible==12.3.0 \
    --hash=sha256:cd156f82fa87f7a899212b0efa9f7ca3a24d609212de9f78428a572eb01e5414
LOCK
}
# END LOCK

digest() { sha256sum | cut -c1-12; }
env_dir=$tools/dra-cpu-ansible-$( { echo "$pyver"; requirements_lock; bundle_lock; } | digest)
coll_dir=$env_dir/collections-$(echo "$collection_id" | digest)
export ANSIBLE_HOME=$env_dir/home ANSIBLE_REMOTE_TEMP=$env_dir/home/tmp \
  ANSIBLE_COLLECTIONS_PATH=$coll_dir:$env_dir/collections ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false \
  ANSIBLE_PYTHON_INTERPRETER=$env_dir/bin/python ANSIBLE_LOCALHOST_WARNING=false \
  ANSIBLE_INVENTORY_UNPARSED_WARNING=false ANSIBLE_PIPELINING=true \
  ANSIBLE_CALLBACK_RESULT_FORMAT=${ANSIBLE_CALLBACK_RESULT_FORMAT:-yaml} \
  HELM_CACHE_HOME=$tools/dra-cpu-helm-home/cache HELM_CONFIG_HOME=$tools/dra-cpu-helm-home/config \
  HELM_DATA_HOME=$tools/dra-cpu-helm-home/data KUBECACHEDIR=$tools/dra-cpu-helm-home/kube-cache \
  PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1

index() { printf '%s' "${PIP_INDEX_URL:-https://pypi.org/simple (the default of pip, unless a pip.conf names another)}"; }

build_env() {
  say "building a private Ansible in $env_dir (Python $pyver, first use only)"
  rm -rf "$env_dir"
  "$py" -m venv "$env_dir" || die 1 "'$py -m venv' failed: install the venv module of Python $pyver (Debian/Ubuntu: python3-venv)"
  requirements_lock > "$env_dir/requirements.lock"
  bundle_lock > "$env_dir/bundle.lock"
  local log=$env_dir/pip.log
  "$env_dir/bin/python" -m pip install --no-input --quiet --require-hashes --only-binary=:all: \
      -r "$env_dir/requirements.lock" >"$log" 2>&1 \
    || die 1 "could not fetch the pinned Python packages of $env_dir/requirements.lock from $(index):
$(tail -n 15 "$log")"
  "$env_dir/bin/python" -m pip download --no-input --quiet --require-hashes --no-deps \
      -d "$env_dir/download" -r "$env_dir/bundle.lock" >"$log" 2>&1 \
    || die 1 "could not fetch kubernetes.core's source, $(sed -n 's/ .*//p;q' "$env_dir/bundle.lock"), from $(index):
$(tail -n 15 "$log")"
  "$env_dir/bin/python" - "$env_dir/download" "$env_dir/collections" <<'PY'
import glob, sys, zipfile
src, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(glob.glob(src + "/ansible-*.whl")[0]) as whl:
    whl.extractall(dest, [n for n in whl.namelist() if n.startswith("ansible_collections/kubernetes/core/")])
PY
  rm -rf "$env_dir/download" "$log"
  date -u +%FT%TZ > "$env_dir/.ready"
}

install_collection() {
  say "installing the collection ($collection) into $coll_dir"
  rm -rf "$coll_dir"
  local log=$env_dir/galaxy.log
  "$env_dir/bin/ansible-galaxy" collection install --no-deps -p "$coll_dir" "$collection" >"$log" 2>&1 \
    || die 1 "could not install the collection $collection$([ -f "$collection" ] || printf ' from %s' "${ANSIBLE_GALAXY_SERVER:-Galaxy (https://galaxy.ansible.com, unless ANSIBLE_GALAXY_SERVER names another)}"):
$(tail -n 15 "$log")"
  rm -f "$log"
  echo "$collection_id" > "$coll_dir/.ready"
}

# wait_for FD FILE WHAT: take an exclusive lock on FILE (opened on FD), saying so if someone holds it
wait_for() {
  eval "exec $1>\"\$2\""
  flock -n "$1" || { say "waiting for $3"; flock "$1"; }
}

if [ ! -f "$env_dir/.ready" ] || [ ! -f "$coll_dir/.ready" ]; then
  mkdir -p "$tools"
  wait_for 9 "$env_dir.lock" "another install_dra_driver_cpu.sh to finish setting up $env_dir"
  [ -f "$env_dir/.ready" ] || build_env
  [ -f "$coll_dir/.ready" ] || install_collection
  exec 9>&-
fi

kubeconfig=$KUBEVIRTCI_CONFIG_PATH/$KUBEVIRT_PROVIDER/.kubeconfig
# one install at a time into one cluster: helm refuses a second operation on a release in progress
wait_for 8 "$tools/dra-cpu-install-$(echo "$kubeconfig" | digest).lock" "another install into $kubeconfig to finish"
# temporary files (kubernetes.core's discovery cache among them) stay under .tools too
export TMPDIR=$env_dir/home/tmp
mkdir -p "$TMPDIR"
helm_cache=$tools/dra-cpu-helm
helm_cache=${helm_cache//\\/\\\\}
exec "$env_dir/bin/ansible-playbook" kubevirtci.dra_cpu.install -e "{\"dra_cpu_helm_cache_dir\": \"${helm_cache//\"/\\\"}\"}" "$@"
