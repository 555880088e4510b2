//! Solana CLI keypair files: a JSON array of 64 bytes, the ed25519 secret key
//! followed by its public key (what `solana-keygen new` writes).

use std::path::{Path, PathBuf};

use ed25519_dalek::SigningKey;

use lendex_domain::pubkey::Pubkey;

/// `~/.config/solana/id.json`, where the Solana CLI keeps its default keypair.
pub fn default_path() -> PathBuf {
    let home = std::env::var_os("HOME").unwrap_or_else(|| ".".into());
    PathBuf::from(home).join(".config/solana/id.json")
}

pub fn pubkey_of(key: &SigningKey) -> Pubkey {
    Pubkey::new_from_array(key.verifying_key().to_bytes())
}

/// The file's text for `key`.
pub fn encode(key: &SigningKey) -> String {
    let bytes = key.to_keypair_bytes();
    let list: Vec<String> = bytes.iter().map(u8::to_string).collect();
    format!("[{}]", list.join(","))
}

/// A keypair from the file's text; the public half must match the secret one.
pub fn decode(text: &str) -> Result<SigningKey, String> {
    let bytes: Vec<u8> = serde_json::from_str(text)
        .map_err(|_| "a keypair file is a JSON array of 64 numbers from 0 to 255".to_string())?;
    let bytes: [u8; 64] = bytes
        .try_into()
        .map_err(|b: Vec<u8>| format!("a keypair file holds 64 bytes, this one {}", b.len()))?;
    SigningKey::from_keypair_bytes(&bytes)
        .map_err(|_| "the keypair's public key does not match its secret key".to_string())
}

pub fn read(path: &Path) -> Result<SigningKey, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read keypair {}: {e}", path.display()))?;
    decode(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes a new random keypair to `path` (readable by its owner only) and
/// returns it; an existing file is never overwritten.
pub fn generate(path: &Path) -> Result<SigningKey, String> {
    use rand::RngCore;
    use std::io::Write;
    let mut seed = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut seed);
    let key = SigningKey::from_bytes(&seed);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => {
            format!("{} exists; refusing to overwrite a keypair", path.display())
        }
        _ => format!("cannot write {}: {e}", path.display()),
    })?;
    file.write_all(encode(&key).as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_checks_the_halves() {
        let key = SigningKey::from_bytes(&[3u8; 32]);
        let text = encode(&key);
        assert!(text.starts_with('[') && text.matches(',').count() == 63);
        assert_eq!(decode(&text).unwrap().to_bytes(), key.to_bytes());
        // Another public half is refused.
        let mut bytes = key.to_keypair_bytes();
        bytes[40] ^= 1;
        let tampered = format!("{:?}", bytes.to_vec()).replace(' ', "");
        assert!(decode(&tampered).unwrap_err().contains("does not match"));
        assert!(
            decode("[1,2,3]")
                .unwrap_err()
                .contains("64 bytes, this one 3")
        );
        assert!(decode("{\"a\":1}").is_err());
        assert!(decode("[256]").is_err());
    }

    #[test]
    fn a_new_keypair_is_private_and_never_overwritten() {
        let dir = std::env::temp_dir().join(format!("lendex-keygen-{}", std::process::id()));
        let path = dir.join("sub/id.json");
        let key = generate(&path).unwrap();
        assert_eq!(read(&path).unwrap().to_bytes(), key.to_bytes());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(
            generate(&path)
                .unwrap_err()
                .contains("refusing to overwrite")
        );
        assert_eq!(read(&path).unwrap().to_bytes(), key.to_bytes());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
