import MeshCore
